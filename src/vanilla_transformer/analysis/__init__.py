"""Analysis: parameter, FLOP and memory counts without building a model, and shape tracing."""

from .parameters import (
    PARAMETER_FORMULA,
    Component,
    ParameterCount,
    parameter_count_for,
    parameter_count,
    ModuleCount,
    count_parameters,
    source_terms,
    source_closed_form,
)
from .flops import FLOP_FORMULA, FlopCount, forward_flops_for, forward_flops
from .memory import dtype_bytes, format_bytes, MemoryEstimate, memory_estimate_for, memory_estimate
from .tracing import Shape, OutputShape, ShapeRecord, trace_shapes, format_shape_table

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
