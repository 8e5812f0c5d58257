; Rust definitions. Conventions: see python.scm.

(struct_item
  name: (type_identifier) @name) @definition.struct

(enum_item
  name: (type_identifier) @name) @definition.enum

(union_item
  name: (type_identifier) @name) @definition.union

(type_item
  name: (type_identifier) @name) @definition.type

(trait_item
  name: (type_identifier) @name) @definition.trait

(impl_item
  trait: (_) @trait
  type: (_) @name) @definition.impl

(impl_item
  !trait
  type: (_) @name) @definition.impl

(function_item
  name: (identifier) @name) @definition.function

; trait method declarations without a body
(function_signature_item
  name: (identifier) @name) @definition.function

(mod_item
  name: (identifier) @name) @definition.module

(macro_definition
  name: (identifier) @name) @definition.macro
