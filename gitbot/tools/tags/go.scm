; Go definitions. Conventions: see python.scm. Methods carry their receiver type as @scope.

(function_declaration
  name: (identifier) @name) @definition.function

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @scope
        (pointer_type (type_identifier) @scope)
        (generic_type type: (type_identifier) @scope)
        (pointer_type (generic_type type: (type_identifier) @scope))
      ]))
  name: (field_identifier) @name) @definition.method

(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.struct

(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface

(type_spec
  name: (type_identifier) @name
  type: [
    (type_identifier) (qualified_type) (generic_type) (pointer_type) (function_type)
    (map_type) (slice_type) (array_type) (channel_type)
  ]) @definition.type

(type_alias
  name: (type_identifier) @name) @definition.type

(method_elem
  name: (field_identifier) @name) @definition.method
