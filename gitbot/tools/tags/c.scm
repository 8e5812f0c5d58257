; C definitions. Conventions: see python.scm.
; Prototypes are kept (a header is mostly prototypes) but dropped by the code when
; the same file also defines the function.

(function_definition
  declarator: (function_declarator
    declarator: (identifier) @name)) @definition.function

; functions returning pointers: `char *f(void)`, `char **g(void)`
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: (identifier) @name))) @definition.function

(function_definition
  declarator: (pointer_declarator
    declarator: (pointer_declarator
      declarator: (function_declarator
        declarator: (identifier) @name)))) @definition.function

(declaration
  declarator: (function_declarator
    declarator: (identifier) @name)) @definition.prototype

(declaration
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: (identifier) @name))) @definition.prototype

(struct_specifier
  name: (type_identifier) @name
  body: (_)) @definition.struct

(union_specifier
  name: (type_identifier) @name
  body: (_)) @definition.union

(enum_specifier
  name: (type_identifier) @name
  body: (_)) @definition.enum

(type_definition
  declarator: (type_identifier) @name) @definition.type

(preproc_function_def
  name: (identifier) @name) @definition.macro
