"""Analysis: parameter, FLOP and memory counts without building a model, shape tracing, and the
switches that break a trained model in one place."""

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
from .switches import ATTENTION_KINDS, SWITCHES, attention_modules, record_attention, switched
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
    "SWITCHES",
    "ATTENTION_KINDS",
    "switched",
    "attention_modules",
    "record_attention",
]
