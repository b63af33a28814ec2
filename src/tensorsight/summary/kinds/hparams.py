"""Hyperparameters: TensorBoard's ``hparams`` plugin (experiment, session start, session end)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import is_torch_tensor, plugin_metadata, to_numpy

__all__ = [
    "EXPERIMENT_TAG",
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SESSION_END_INFO_TAG",
    "SESSION_START_INFO_TAG",
    "encode",
]

KIND = "hparams"
PLUGIN_NAME = "hparams"
SCHEMA_VERSION = 0
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"
_STATUS_SUCCESS = 1
_TYPES = tb.HParamDataType


def _plain(name: str, value: object) -> bool | float | str | None:
    """The hparam value as bool, float or str (None: skipped, as torch does)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    if is_torch_tensor(value) or hasattr(value, "dtype"):
        array = to_numpy(value, what=f"Hyperparameter {name!r}")
        if array.size == 1:
            return float(array.reshape(-1)[0])
    msg = (
        f"Hyperparameter {name!r}: got {type(value).__name__}. Expected bool, int, float, str, "
        "None or a one-element tensor."
    )
    raise UsageError(msg)


def _set(target: Any, value: bool | float | str) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, str):
        target.string_value = value
    else:
        target.number_value = value


def _value(tag: str, **data: Any) -> Any:
    content = tb.HParamsPluginData(version=SCHEMA_VERSION, **data).SerializeToString()
    return tb.Summary.Value(tag=tag, metadata=plugin_metadata(PLUGIN_NAME, content))


def encode(
    hparam_dict: Mapping[str, object] | object,
    metric_dict: Mapping[str, object] | object,
    hparam_domain_discrete: Mapping[str, Sequence[object]] | None = None,
) -> tuple[Any, Any, Any]:
    """Three ``Summary.Value`` s: experiment, session start info and session end info.

    Args:
        hparam_dict: Name -> value (bool, number, str, one-element tensor; None is skipped).
        metric_dict: Name -> value of the metrics; only the names go into the experiment
            (the writer logs the values as scalars).
        hparam_domain_discrete: Name -> every value the hparam can take.

    Raises:
        UsageError: Not dicts, an unsupported value type, or a domain that does not match.
    """
    if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
        msg = (
            f"Hyperparameters: got {type(hparam_dict).__name__} and "
            f"{type(metric_dict).__name__}. Expected two dicts (hparam_dict, metric_dict)."
        )
        raise UsageError(msg)
    domains = dict(hparam_domain_discrete or {})
    for name, choices in domains.items():
        if name not in hparam_dict or isinstance(choices, str | bytes):
            msg = (
                f"Hyperparameter domain {name!r}: expected a list of values for a name in "
                f"hparam_dict, got {type(choices).__name__}."
            )
            raise UsageError(msg)
    start = tb.SessionStartInfo()
    infos = []
    for name, raw in hparam_dict.items():
        value = _plain(name, raw)
        if value is None:
            continue
        _set(start.hparams[name], value)
        if isinstance(value, bool):
            kind = _TYPES["DATA_TYPE_BOOL"]
        elif isinstance(value, str):
            kind = _TYPES["DATA_TYPE_STRING"]
        else:
            kind = _TYPES["DATA_TYPE_FLOAT64"]
        info = tb.HParamInfo(name=name, type=kind)
        for choice in domains.get(name, ()):
            plain = _plain(name, choice)
            if plain is None or type(plain) is not type(value):
                msg = (
                    f"Hyperparameter domain {name!r}: value {choice!r} has another type than "
                    f"the hparam ({type(value).__name__}). Expected values of one type."
                )
                raise UsageError(msg)
            _set(info.domain_discrete.values.add(), plain)
        infos.append(info)
    metrics = [tb.MetricInfo(name=tb.MetricName(tag=str(k))) for k in metric_dict]
    experiment = tb.Experiment(hparam_infos=infos, metric_infos=metrics)
    end = tb.SessionEndInfo(status=_STATUS_SUCCESS)
    return (
        _value(EXPERIMENT_TAG, experiment=experiment),
        _value(SESSION_START_INFO_TAG, session_start_info=start),
        _value(SESSION_END_INFO_TAG, session_end_info=end),
    )
