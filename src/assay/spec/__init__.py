"""What users write, as pydantic models: task files and criteria."""

from assay.spec.criteria import Criterion
from assay.spec.task import TaskDefinition

__all__ = ["Criterion", "TaskDefinition"]
