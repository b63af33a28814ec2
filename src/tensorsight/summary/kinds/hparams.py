"""Hyperparameters: TensorBoard's ``hparams`` plugin (experiment, session start, session end)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import is_torch_tensor, plugin_metadata, to_numpy
from tensorsight.summary.kinds._kind import Kind, Raw

__all__ = [
    "EXPERIMENT_TAG",
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SESSION_END_INFO_TAG",
    "SESSION_START_INFO_TAG",
    "SPEC",
    "HParamsRecord",
    "decode",
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


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class HParamsRecord:
    """One hparams-plugin message.

    ``part`` is ``"experiment"`` (the hparams and metrics declared for the experiment),
    ``"session_start"`` (the hparam values of one run: ``hparams``) or ``"session_end"``
    (``status``). ``metrics`` lists metric tags declared by an experiment.
    """

    step: int
    wall_time: float
    part: str
    hparams: dict[str, Any] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    status: int | None = None


def _pb_value(v: Any) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "number_value":
        return v.number_value
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    return None


def decode(raw: Raw) -> list[HParamsRecord]:
    """An hparams plugin message (its metadata content; values without content give ``[]``)."""
    if not raw.content:
        return []
    step, wall = raw.step, raw.wall_time
    data = tb.HParamsPluginData.FromString(raw.content)
    part = data.WhichOneof("data")
    if part == "experiment":
        exp = data.experiment
        hparams: dict[str, Any] = {}
        for info in exp.hparam_infos:
            domain = info.WhichOneof("domain")
            entry: dict[str, Any] = {"type": info.type}
            if domain == "domain_discrete":
                entry["values"] = [_pb_value(v) for v in info.domain_discrete.values]
            elif domain == "domain_interval":
                entry["interval"] = (info.domain_interval.min_value, info.domain_interval.max_value)
            hparams[info.name] = entry
        metrics = tuple(m.name.tag for m in exp.metric_infos)
        return [HParamsRecord(step, wall, "experiment", hparams, metrics)]
    if part == "session_start_info":
        values = {k: _pb_value(v) for k, v in data.session_start_info.hparams.items()}
        return [HParamsRecord(step, wall, "session_start", values)]
    if part == "session_end_info":
        return [HParamsRecord(step, wall, "session_end", status=data.session_end_info.status)]
    return []


SPEC = Kind(KIND, HParamsRecord, PLUGIN_NAME, decode, reads="metadata")
