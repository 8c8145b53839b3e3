"""Pure metric math: descriptive statistics and classification metrics."""

from assay.metrics.classification import ClassificationReport, classification_report
from assay.metrics.descriptive import describe
from assay.metrics.values import MetricTable

__all__ = ["ClassificationReport", "MetricTable", "classification_report", "describe"]
