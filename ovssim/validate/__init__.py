"""Validation: compare the simulator with the seeds' published numbers and this machine's measurements.

``seed_data`` reads the seeds' tables; ``simulate`` runs configuration batches and is the calibration glue;
the modules named in ``TESTBEDS`` are the per-testbed validations (fit on one part of the
data, predict the rest); ``report`` writes validation/report.md; ``cli`` is ``ovssim validate``.
"""

# The report's sections, in report order; each names a module of this package with a ``run(runner, settings)``.
TESTBEDS = ("thesis", "local", "states", "load", "interim", "xenserver", "seed001", "chains", "uml", "batching", "afxdp", "tcp_window")
