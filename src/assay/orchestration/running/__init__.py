"""The top floor of orchestration: a plan executed into a run folder.

The row runner (agent, sandbox, grading, judging), the run session (folder, lock, resume,
signals, early stop), the row and run files, and the executors (local, Ray). Imports from
``planning`` and ``loading``.
"""
