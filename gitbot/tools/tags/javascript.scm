; JavaScript definitions. Conventions: see python.scm.

(class_declaration
  name: (identifier) @name) @definition.class

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(method_definition
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method

; class fields holding a function: `handle = () => {}`
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.method

; `const f = () => {}`, `var g = function () {}`, `const C = class {}`
(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: (class))) @definition.class

; `module.exports.f = function () {}`, `Foo.prototype.bar = () => {}`
(expression_statement
  (assignment_expression
    left: (member_expression
      property: (property_identifier) @name)
    right: [(arrow_function) (function_expression)])) @definition.function
