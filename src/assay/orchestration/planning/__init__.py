"""The second floor of orchestration: loaded tasks expanded over their rows into a plan.

Dataset expansion into work items, the plan (``plan.json``'s content), containment and
judge resolution decided per task, the checks a resume makes against the plan it continues,
and plan options from what a caller gives. Imports from ``loading`` only, never ``running``.
"""
