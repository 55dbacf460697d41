"""Every field a review or recall error can name is a field of that endpoint's request.

The walk reads the code, not responses: for each endpoint method of review/api.py and
recall/api.py it finds the input serializers the method validates with, then every
function it calls in the api and services modules (transitively), and collects the field
names those raise errors on: `field="..."` of domain errors, keys of ValidationError dicts,
`errors["..."]` of recall's validation, and `scope.namespace(...)` (field `namespace`). A
name that is not a declared input field of that endpoint (dotted for nested ones, as
`context.hour`) would send the client a `fields` key it never sent.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

import pytest
from rest_framework import serializers
from rest_framework.views import APIView

from recall import api as recall_api
from recall import services as recall_services
from review import api as review_api
from review import services as review_services

# review.services is a package: the walk reads the modules its functions live in.
MODULES = (
    review_api,
    review_services.cards,
    review_services.cram,
    review_services.errors,
    review_services.grading,
    review_services.sessions,
    recall_api,
    recall_services,
)


def _functions(module: types.ModuleType) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(inspect.getsource(module))
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


FUNCTIONS = {module: _functions(module) for module in MODULES}


def _resolve(call: ast.Call, module: types.ModuleType) -> tuple[types.ModuleType, str] | None:
    """The (module, function name) a call goes to, when it is a walked module's function."""
    func = call.func
    if isinstance(func, ast.Name):
        target = getattr(module, func.id, None)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner = getattr(module, func.value.id, None)
        target = getattr(owner, func.attr, None) if isinstance(owner, types.ModuleType) else None
    else:
        return None
    if not inspect.isfunction(target):
        return None
    home = inspect.getmodule(target)
    if home in FUNCTIONS and target.__name__ in FUNCTIONS[home]:
        return home, target.__name__
    return None


def _strings(node: ast.AST) -> set[str]:
    """String constants an expression can evaluate to (a literal or `a if c else b`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    return set()


def _error_fields(node: ast.AST) -> set[str]:
    """Field names errors raised directly in this code can carry."""
    fields: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            for keyword in child.keywords:
                if keyword.arg == "field":
                    fields |= _strings(keyword.value)
            name = getattr(child.func, "attr", getattr(child.func, "id", ""))
            if name == "ValidationError" and child.args and isinstance(child.args[0], ast.Dict):
                for key in child.args[0].keys:
                    fields |= _strings(key) if key is not None else set()
            if (
                name == "namespace"
                and isinstance(child.func, ast.Attribute)
                and not any(k.arg == "field" for k in child.keywords)
            ):
                fields.add("namespace")  # Scope.namespace's default field
        elif isinstance(child, ast.Assign):
            for target in child.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "errors"
                ):
                    fields |= _strings(target.slice)
    return fields


def _reachable_fields(node: ast.AST, module: types.ModuleType) -> set[str]:
    fields = _error_fields(node)
    seen: set[tuple[types.ModuleType, str]] = set()
    todo = [(node, module)]
    while todo:
        current, current_module = todo.pop()
        for child in ast.walk(current):
            if isinstance(child, ast.Call):
                target = _resolve(child, current_module)
                if target is not None and target not in seen:
                    seen.add(target)
                    function = FUNCTIONS[target[0]][target[1]]
                    fields |= _error_fields(function)
                    todo.append((function, target[0]))
    return fields


def _declared(serializer: serializers.Serializer, prefix: str = "") -> set[str]:
    names: set[str] = set()
    for name, field in serializer.fields.items():
        names.add(prefix + name)
        if isinstance(field, serializers.Serializer):
            names |= _declared(field, f"{prefix}{name}.")
    return names


def _inputs(node: ast.AST, module: types.ModuleType) -> set[str]:
    """Declared fields of the serializers the method validates the request with: made with
    `data=`, or this thread's instance (`per_thread(Serializer)`, memories.fastpaths)."""
    declared: set[str] = set()
    for child in ast.walk(node):
        if not (isinstance(child, ast.Call) and isinstance(child.func, ast.Name)):
            continue
        if child.func.id == "per_thread" and child.args and isinstance(child.args[0], ast.Name):
            target = getattr(module, child.args[0].id, None)
        elif any(k.arg == "data" for k in child.keywords):
            target = getattr(module, child.func.id, None)
        else:
            continue
        if inspect.isclass(target) and issubclass(target, serializers.Serializer):
            declared |= _declared(target())
    return declared


def _endpoints() -> list[tuple[str, set[str], set[str]]]:
    endpoints = []
    for module in (review_api, recall_api):
        for name, view in vars(module).items():
            if not (inspect.isclass(view) and issubclass(view, APIView)):
                continue
            if view.__module__ != module.__name__:
                continue
            for method in ("get", "post", "put", "patch", "delete"):
                if method not in vars(view):
                    continue
                source = textwrap.dedent(inspect.getsource(vars(view)[method]))
                node = ast.parse(source)
                endpoints.append(
                    (
                        f"{name}.{method}",
                        _inputs(node, module),
                        _reachable_fields(node, module),
                    )
                )
    return endpoints


ENDPOINTS = _endpoints()


@pytest.mark.parametrize(
    ("endpoint", "declared", "named"), ENDPOINTS, ids=[e[0] for e in ENDPOINTS]
)
def test_every_error_field_is_a_field_of_the_request(endpoint, declared, named):
    assert named <= declared, f"{endpoint} can name {sorted(named - declared)}"


def test_the_walk_sees_the_errors_it_checks():
    by_name = {name: (declared, named) for name, declared, named in ENDPOINTS}
    assert len(by_name) >= 13
    assert {"cards", "deck", "namespace"} <= by_name["CramStartView.post"][1]
    assert {"grade", "version"} <= by_name["CardGradeView.post"][1]
    assert {"card", "grade", "version"} <= by_name["SessionGradeView.post"][1]
    assert {"tz", "namespace"} <= by_name["StatsView.get"][1]
    assert by_name["CardUndoView.post"] == (set(), set())
    recall_declared, recall_named = by_name["RecallView.post"]
    assert {"track", "namespaces", "query", "context.hour"} <= recall_named
    assert "context.weekday" in recall_declared
