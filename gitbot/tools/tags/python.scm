; Definitions only (no references): list_code_definition_names and read_file's outline.
; Capture conventions (shared by every file here):
;   @definition.<kind>  the whole definition node; its byte range decides nesting
;   @name               the identifier shown
;   @scope              optional receiver/owner, shown as "<scope>.<name>"
;   @trait              optional implemented trait, shown as "<trait> for <name>"
; A function nested in a class-like definition is reported as a method by the code,
; so queries only say "function".

(class_definition
  name: (identifier) @name) @definition.class

(function_definition
  name: (identifier) @name) @definition.function
