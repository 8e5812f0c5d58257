; Bash definitions. Conventions: see python.scm.

(function_definition
  name: (word) @name) @definition.function
