from __future__ import annotations

import inspect

import pytest

from tensorsight import errors


def _error_classes():
    return [
        obj
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, Exception) and name in errors.__all__
    ]


def test_every_user_error_derives_from_the_root():
    for cls in _error_classes():
        if cls is errors.InternalError:
            assert not issubclass(cls, errors.TensorsightError)
        else:
            assert issubclass(cls, errors.TensorsightError), cls


def test_every_error_is_drawn_in_the_module_docstring():
    assert errors.__doc__ is not None
    for cls in _error_classes():
        assert cls.__name__ in errors.__doc__


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.UsageError, ValueError),
        (errors.MissingDependencyError, ImportError),
        (errors.RegistryError, KeyError),
        (errors.InputFileError, OSError),
        (errors.SchemaVersionError, ValueError),
    ],
)
def test_builtin_mixins_let_callers_catch_the_natural_type(cls, builtin):
    with pytest.raises(builtin):
        raise cls("x")


def test_key_error_subclass_prints_its_message_without_quotes():
    assert str(errors.RegistryError("Unknown metric 'x'.")) == "Unknown metric 'x'."
