"""The first floor of orchestration: a task file read, checked and resolved into a task.

Task files and experiment files parsed and checked (criteria, sandbox, agent preflight),
``-D`` overrides and thresholds, the rows of a dataset streamed (inline, files, store, QA),
and the secrets a run knows. Imports nothing from the floors above (planning, running).
"""
