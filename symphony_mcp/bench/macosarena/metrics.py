"""MacOSArena's comparison metrics (`evaluators/metrics/common.py` upstream), written here from their documented
behaviour: a getter's value compared with the task's expected value. Each is pure; a task names one by
`expected[i].rules.func` and passes `rules.parameters` after the value (a list positionally, a dict by name).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

METRIC_MODULE = "common"  # `expected[i].type`: the only metrics module MacOSArena ships

_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    ">=": operator.ge,
    "<=": operator.le,
    "!=": operator.ne,
}


def _compare(left: float, op: str, right: float) -> bool:
    if op not in _COMPARISONS:
        raise ValueError(f"unknown comparison {op!r}: one of {', '.join(_COMPARISONS)}")
    return bool(_COMPARISONS[op](left, right))


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def find_str(value: str, keyword: str) -> bool:
    return keyword in value


def find_str_in_list(value: str | list[str], keyword: str | list[str]) -> bool:
    """Some item of `value` holds `keyword` (a list: all its strings)."""
    needed = _as_list(keyword)
    return any(all(k in item for k in needed) for item in _as_list(value))


def find_str_in_list_ci(value: str | list[str], keyword: str | list[str]) -> bool:
    needed = [k.lower() for k in _as_list(keyword)]
    return any(all(k in item.lower() for k in needed) for item in _as_list(value))


def find_dict(value: list[dict[str, Any]], target: dict[str, Any]) -> bool:
    """Some dict of `value` holds every key of `target` with the same value."""
    return any(all(key in item and item[key] == wanted for key, wanted in target.items()) for item in value)


def exact_match(value: object, expected: object) -> bool:
    return value == expected


def dict_equal(value: object, expected: object) -> bool:
    return isinstance(value, dict) and isinstance(expected, dict) and value == expected


def is_true(value: object) -> bool:
    return value is True


def is_false(value: object) -> bool:
    return value is False


def check_list_length(value: list[Any], op: str, number: int) -> bool:
    return _compare(len(value), op, number)


def compare_numbers(value: float, op: str, number: float) -> bool:
    return _compare(value, op, number)


def contains_element(value: list[Any], element: object) -> bool:
    return element in value


def check_list_length_and_contains_element(value: list[Any], op: str, number: int, element: object) -> bool:
    return check_list_length(value, op, number) and contains_element(value, element)


METRICS: dict[str, Callable[..., bool]] = {
    metric.__name__: metric
    for metric in (
        find_str,
        find_str_in_list,
        find_str_in_list_ci,
        find_dict,
        exact_match,
        dict_equal,
        is_true,
        is_false,
        check_list_length,
        compare_numbers,
        contains_element,
        check_list_length_and_contains_element,
    )
}


def apply(name: str, value: object, parameters: object) -> bool:
    """`rules.func` on the getter's value with `rules.parameters` as MacOSArena passes them."""
    metric = METRICS[name]
    if isinstance(parameters, list):
        return metric(value, *parameters)
    if isinstance(parameters, dict):
        return metric(value, **parameters)
    return metric(value, parameters)
