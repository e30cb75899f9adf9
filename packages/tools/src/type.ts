// TypeBox's `Type` namespace (`import { Type } from 'typebox'`) keeps all of TypeBox in the bundle, 210 KB with its
// TypeScript-syntax parser, because a namespace object cannot be tree-shaken. The builders Keel's tools use,
// imported by name, are 17 KB: this object holds just those, for `Type.Object(...)` call sites. Add a builder here
// when a tool needs one.
import {
  Array as TypeArray,
  Boolean as TypeBoolean,
  Enum,
  Integer,
  Number as TypeNumber,
  Object as TypeObject,
  Optional,
  String as TypeString,
} from 'typebox'

export const Type = {
  Array: TypeArray,
  Boolean: TypeBoolean,
  Enum,
  Integer,
  Number: TypeNumber,
  Object: TypeObject,
  Optional,
  String: TypeString,
}
