"""kafpy's PySpark Python Data Source "kafpy": batch and streaming reads and writes with the
options and schema of Spark's Kafka connector.

Spark starts its Python workers, and the worker that looks up the `pyspark_*` data
sources, with PYSPARK_PYTHON, or with whatever `python3` is first on PATH when it is
unset, which may be an interpreter without kafpy. Loading kafpy's Spark package sets
PYSPARK_PYTHON to the interpreter running it (where kafpy is installed) when unset;
Spark takes the environment when the session starts, so this works for sessions started
after `import kafpy.spark` (or any kafpy.spark module).
"""

import os
import sys

from kafpy.common.extras import require_extra

require_extra("spark", "kafpy's Spark data source (kafpy.spark)")

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
