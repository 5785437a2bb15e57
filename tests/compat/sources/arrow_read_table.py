"""A line both packages' programs run before building a Parquet file source, so the quixstreams
baseline's source process does not abort at its exit because of a pyarrow bug.

apache/arrow#33975: `pyarrow.parquet.read_table` given a Python file object (quixstreams' Parquet
format reads every local or S3 file that way, in the source's spawned process) leaves clean-up work
on Arrow's thread pool after it returns; a process that exits right after, as a source's does after
its last file, now and then aborts at exit with "terminate called without an active exception"
(exit -6, which quixstreams reports as a failed source). Measured here with pyarrow 26.0.1: 21 of 150
spawned processes that read one such file and exit aborted; 0 of 150 with `use_threads=False`,
which finishes that work inside the call. The rows read are the same. stream_edge reads Parquet with
`ParquetFile.iter_batches` and never calls `read_table`, so the line changes nothing on its side.

The partial is bound at the program's top: quixstreams' format keeps `pq.read_table` from its
constructor (in the parent), and the partial travels to the source's process inside the pickled
source.
"""

READ_TABLE_WITHOUT_THREADS = '''
import functools as _functools
import pyarrow.parquet as _pyarrow_parquet
_pyarrow_parquet.read_table = _functools.partial(_pyarrow_parquet.read_table, use_threads=False)
'''
