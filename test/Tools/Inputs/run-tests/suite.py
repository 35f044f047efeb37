"""The fake suites of test/Tools/run-tests.test: each fake build's
test/lit.site.cfg.py imports this for a one-directory ShTest suite whose
tests are `*.test` files that run `true`, plus optional result codes that
scripts/run-tests.sh does not know (lit's summary then counts them under
their own label)."""
import os

import lit.formats
import lit.Test

# A failure lit reports under a label other than "Failed", and a non-failure
# under a label other than "Passed" or "Unsupported".
ODD_FAILURE = lit.Test.ResultCode("ODD_FAILURE", "Odd failure", True)
ODD_PASS = lit.Test.ResultCode("ODD_PASS", "Odd pass", False)


class OddFormat(lit.formats.ShTest):
    """ShTest, but a test named odd.test gets the suite's odd result code."""

    def __init__(self, odd):
        super().__init__(True)
        self.odd = odd

    def execute(self, test, lit_config):
        if self.odd is not None and test.getSourcePath().endswith("odd.test"):
            return lit.Test.Result(self.odd, "")
        return super().execute(test, lit_config)


def configure(config, site_cfg, odd=None):
    config.name = "fake-" + os.path.basename(os.path.dirname(os.path.dirname(site_cfg)))
    config.test_format = OddFormat(odd)
    config.suffixes = [".test"]
    config.test_source_root = os.path.dirname(site_cfg)
    config.test_exec_root = config.test_source_root
