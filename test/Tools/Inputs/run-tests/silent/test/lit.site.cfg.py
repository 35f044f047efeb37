# A site configuration that ends lit quietly: no test runs, no summary, exit 0.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import suite  # noqa: E402
suite.configure(config, __file__)
sys.exit(0)
