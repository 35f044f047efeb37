# A site configuration that raises: lit stops before running any test.
raise RuntimeError("the build directory was configured for another checkout")
