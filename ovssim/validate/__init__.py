"""Validation: compare the simulator with the seeds' published numbers and this machine's measurements.

``seed_data`` reads the seeds' tables; ``simulate`` runs configuration batches and is the calibration glue;
``thesis``, ``local``, ``interim`` and ``xenserver`` are the per-testbed validations (fit on one part of the
data, predict the rest); ``report`` writes validation/report.md; ``cli`` is ``ovssim validate``.
"""
