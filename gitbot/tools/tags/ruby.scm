; Ruby definitions. Conventions: see python.scm. `def self.x` carries `self` as @scope.

(class
  name: [(constant) (scope_resolution)] @name) @definition.class

(module
  name: [(constant) (scope_resolution)] @name) @definition.module

(method
  name: (_) @name) @definition.function

(singleton_method
  object: (_) @scope
  name: (_) @name) @definition.function
