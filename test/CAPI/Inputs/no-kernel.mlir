// Valid IR without a gpu.module: nothing to compile.
func.func @host() {
  return
}
