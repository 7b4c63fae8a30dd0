"""Analysis: parameter, FLOP and memory counts without building a model, and shape tracing."""

from .flops import FLOP_FORMULA, FlopCount, forward_flops, forward_flops_for
from .memory import MemoryEstimate, dtype_bytes, format_bytes, memory_estimate, memory_estimate_for
from .parameters import (
    PARAMETER_FORMULA,
    Component,
    ModuleCount,
    ParameterCount,
    count_parameters,
    parameter_count,
    parameter_count_for,
    source_closed_form,
    source_terms,
)
from .tracing import OutputShape, Shape, ShapeRecord, format_shape_table, trace_shapes

__all__ = [
    "PARAMETER_FORMULA",
    "Component",
    "ParameterCount",
    "parameter_count_for",
    "parameter_count",
    "ModuleCount",
    "count_parameters",
    "source_terms",
    "source_closed_form",
    "FLOP_FORMULA",
    "FlopCount",
    "forward_flops_for",
    "forward_flops",
    "dtype_bytes",
    "format_bytes",
    "MemoryEstimate",
    "memory_estimate_for",
    "memory_estimate",
    "Shape",
    "OutputShape",
    "ShapeRecord",
    "trace_shapes",
    "format_shape_table",
]
