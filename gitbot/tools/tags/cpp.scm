; C++ definitions. Conventions: see python.scm.
; Prototypes are kept (headers, method declarations inside a class body) but a top-level
; prototype is dropped by the code when the same file also defines the function.

(function_definition
  declarator: (function_declarator
    declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)) @definition.function

; out-of-class definitions keep their qualifier: `void Foo::bar() {}`
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier) @name)) @definition.method

; functions returning pointers or references: `char *f()`, `Foo &Foo::get()`
(function_definition
  declarator: [
    (pointer_declarator
      declarator: (function_declarator
        declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))
    (reference_declarator
      (function_declarator
        declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))
  ]) @definition.function

(declaration
  declarator: (function_declarator
    declarator: [(identifier) (qualified_identifier) (destructor_name) (operator_name)] @name)) @definition.prototype

(field_declaration
  declarator: (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @definition.prototype

(class_specifier
  name: (type_identifier) @name
  body: (_)) @definition.class

(struct_specifier
  name: (type_identifier) @name
  body: (_)) @definition.struct

(union_specifier
  name: (type_identifier) @name
  body: (_)) @definition.union

(enum_specifier
  name: (type_identifier) @name
  body: (_)) @definition.enum

(namespace_definition
  name: (_) @name) @definition.namespace

(type_definition
  declarator: (type_identifier) @name) @definition.type

(alias_declaration
  name: (type_identifier) @name) @definition.type

(preproc_function_def
  name: (identifier) @name) @definition.macro
