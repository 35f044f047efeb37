// Not a module: an op the tile dialect does not have.
func.func @f() {
  "tile.no_such_op"() : () -> ()
  return
}
