"""Static reading of a Python package's source with ``ast``: classes, string constants, pydantic fields.

The agent-platform packages are parsed, never imported (importing would need their whole dependency tree
and would run their code). This module resolves what the collectors need: a class's bases across the
package's own modules, class attributes (also inherited), string expressions built from literals and
module constants, pydantic ``BaseModel`` fields and function signatures as JSON-schema-like objects, and
the URL / environment-variable constants a module mentions.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from rated.catalog.collect.archive import Archive
from rated.catalog.collect.normalise import clean_text

__all__ = ["ClassInfo", "PySource", "doc_params", "is_env_var"]

_ENV_VAR = re.compile(
    r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*_(API_KEY|KEY|TOKEN|SECRET|PASSWORD|ACCESS_TOKEN|APP_ID|CLIENT_ID|"
    r"CLIENT_SECRET|SUBSCRIPTION_KEY|API_TOKEN|SECRET_KEY|PRIVATE_KEY|USERNAME|ACCOUNT|ENDPOINT|API_URL|URL)$"
)
_URL = re.compile(r"^(https?|wss?)://[^\s\"'<>]+$")
# URL constants that are not a service endpoint: OAuth scopes, placeholders, documentation/example hosts
_NOT_ENDPOINT = re.compile(
    r"(/auth/[a-z]|\.default$|//(www\.)?(example\.(com|org)|schema\.org|localhost)\b)", re.I
)
_SCALARS = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "bytes": {"type": "string"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "dict": {"type": "object"},
    "Dict": {"type": "object"},
    "Mapping": {"type": "object"},
    "Any": {},
    "object": {},
}
_ARRAYS = {"list", "List", "Sequence", "tuple", "Tuple", "set", "Set", "Iterable", "frozenset"}
_DOC_ARG = re.compile(r"^\s*\*{0,2}(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r":param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)")


def is_env_var(text: str) -> bool:
    """Looks like the name of a credential/config environment variable (``SERPER_API_KEY``)."""
    return bool(_ENV_VAR.match(text))


@dataclass(frozen=True)
class ClassInfo:
    module: str
    node: ast.ClassDef

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.node.name}"


class PySource:
    """The ``.py`` files of one package, keyed by dotted module name, parsed lazily."""

    def __init__(self, files: Mapping[str, str]):
        self._files: dict[str, tuple[str, str]] = {}
        self._packages: set[str] = set()
        for path, text in files.items():
            if not path.endswith(".py"):
                continue
            parts = path[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
                self._packages.add(".".join(parts))
            self._files[".".join(parts)] = (path, text)
        self._trees: dict[str, ast.Module | None] = {}
        self._imports: dict[str, dict[str, str]] = {}
        self.errors: list[str] = []

    @classmethod
    def from_archive(cls, archive: Archive, prefix: str) -> PySource:
        """All ``.py`` members under ``prefix`` (e.g. ``"langchain_community/"``)."""
        return cls({n: archive.read_text(n) for n in archive.glob(f"{prefix}*.py")})

    # ------------------------------------------------------------------ modules

    def modules(self, prefix: str = "") -> list[str]:
        return sorted(m for m in self._files if m == prefix or m.startswith(prefix))

    def path(self, module: str) -> str:
        return self._files[module][0]

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            if module not in self._files:
                self._trees[module] = None
            else:
                path, text = self._files[module]
                try:
                    self._trees[module] = ast.parse(text, filename=path)
                except SyntaxError as exc:
                    self.errors.append(f"{path}: cannot parse ({exc.msg}, line {exc.lineno})")
                    self._trees[module] = None
        return self._trees[module]

    def imports(self, module: str) -> dict[str, str]:
        """Local name -> qualified target (``pkg.mod.Name`` or ``pkg.mod``) for the module's imports."""
        if module in self._imports:
            return self._imports[module]
        found: dict[str, str] = {}
        tree = self.tree(module)
        package = module if module in self._packages else module.rpartition(".")[0]
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    found.setdefault(local, alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".") if package else []
                    anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    if alias.name != "*":
                        found.setdefault(alias.asname or alias.name, f"{base}.{alias.name}")
        self._imports[module] = found
        return found

    # ------------------------------------------------------------------ names

    def lookup(self, module: str, name: str, _depth: int = 0) -> tuple[str, ast.AST] | None:
        """The top-level class/function/assignment value named ``name`` in ``module``, following imports."""
        tree = self.tree(module)
        if tree is None or _depth > 8:
            return None
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return module, node
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                return module, node.value
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == name
            ):
                return (module, node.value) if node.value is not None else None
        target = self.imports(module).get(name)
        if target:
            mod, _, attr = target.rpartition(".")
            if mod in self._files:
                return self.lookup(mod, attr, _depth + 1)
        return None

    def qualify(self, module: str, expr: ast.expr) -> str:
        """The dotted, import-resolved name of a Name/Attribute expression (``""`` for anything else)."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return ""
        head = self.imports(module).get(expr.id)
        if head is None:
            head = f"{module}.{expr.id}" if self.lookup(module, expr.id) else expr.id
        return ".".join([head, *reversed(parts)])

    def resolve_class(self, module: str, expr: ast.expr) -> ClassInfo | str:
        """A class of this package, or the qualified name of an outside one."""
        if isinstance(expr, ast.Subscript):  # Generic[...] bases
            expr = expr.value
        if isinstance(expr, ast.Name):
            hit = self.lookup(module, expr.id)
            if hit and isinstance(hit[1], ast.ClassDef):
                return ClassInfo(hit[0], hit[1])
        qual = self.qualify(module, expr)
        mod, _, attr = qual.rpartition(".")
        if mod in self._files:
            hit = self.lookup(mod, attr)
            if hit and isinstance(hit[1], ast.ClassDef):
                return ClassInfo(hit[0], hit[1])
        return qual

    # ------------------------------------------------------------------ classes

    def classes(self, prefix: str = "") -> Iterator[ClassInfo]:
        for module in self.modules(prefix):
            tree = self.tree(module)
            for node in tree.body if tree else ():
                if isinstance(node, ast.ClassDef):
                    yield ClassInfo(module, node)

    def bases(self, cls: ClassInfo) -> list[ClassInfo | str]:
        return [self.resolve_class(cls.module, b) for b in cls.node.bases]

    def mro(self, cls: ClassInfo) -> list[ClassInfo | str]:
        """The class, then its bases depth-first (package classes resolved, outside ones as names)."""
        seen: set[str] = set()
        out: list[ClassInfo | str] = []

        def visit(item: ClassInfo | str, depth: int) -> None:
            key = item.qualname if isinstance(item, ClassInfo) else item
            if key in seen or depth > 20:
                return
            seen.add(key)
            out.append(item)
            if isinstance(item, ClassInfo):
                for base in self.bases(item):
                    visit(base, depth + 1)

        visit(cls, 0)
        return out

    def derives_from(self, cls: ClassInfo, outside: Callable[[str], bool]) -> bool:
        """Whether some outside base (by qualified name) satisfies ``outside``."""
        return any(isinstance(b, str) and outside(b) for b in self.mro(cls)[1:])

    def class_attr(self, cls: ClassInfo, attr: str) -> tuple[str, ast.expr] | None:
        """The value assigned to ``attr`` in the class body, else in its package bases."""
        for item in self.mro(cls):
            if not isinstance(item, ClassInfo):
                continue
            for node in item.node.body:
                if (
                    isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    and node.target.id == attr
                ):
                    if node.value is not None:
                        return item.module, node.value
                elif isinstance(node, ast.Assign):
                    if any(isinstance(t, ast.Name) and t.id == attr for t in node.targets):
                        return item.module, node.value
        return None

    def method(self, cls: ClassInfo, name: str) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        for item in self.mro(cls):
            if isinstance(item, ClassInfo):
                for node in item.node.body:
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                        return item.module, node
        return None

    # ------------------------------------------------------------------ values

    def string(self, module: str, expr: ast.AST | None, _depth: int = 0) -> str | None:
        """Evaluate a string expression made of literals, f-strings, ``+``, ``.format``/``dedent`` calls and
        module constants; None when it depends on run-time values."""
        if expr is None or _depth > 10:
            return None
        if isinstance(expr, ast.Constant):
            return expr.value if isinstance(expr.value, str) else None
        if isinstance(expr, ast.JoinedStr):
            parts = []
            for value in expr.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                elif isinstance(value, ast.FormattedValue):
                    inner = self.string(module, value.value, _depth + 1)
                    parts.append(inner if inner is not None else "{" + ast.unparse(value.value) + "}")
            return "".join(parts)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left, right = (
                self.string(module, expr.left, _depth + 1),
                self.string(module, expr.right, _depth + 1),
            )
            return None if left is None or right is None else left + right
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
            return self.string(module, expr.left, _depth + 1)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in {"format", "strip", "format_map"}:
                return self.string(module, func.value, _depth + 1)
            fname = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if fname in {"dedent", "cleandoc", "str"} and expr.args:
                return self.string(module, expr.args[0], _depth + 1)
            if fname == "Field":
                return self.string(module, _field_default(expr), _depth + 1)
            return None
        if isinstance(expr, ast.Name):
            hit = self.lookup(module, expr.id)
            return self.string(hit[0], hit[1], _depth + 1) if hit else None
        if isinstance(expr, ast.Attribute):
            qual = self.qualify(module, expr)
            mod, _, attr = qual.rpartition(".")
            if mod in self._files:
                hit = self.lookup(mod, attr)
                return self.string(hit[0], hit[1], _depth + 1) if hit else None
        return None

    def literal(self, module: str, expr: ast.AST | None) -> Any:
        """A JSON-able literal (numbers, strings, lists, dicts), else None."""
        if expr is None:
            return None
        text = self.string(module, expr)
        if text is not None:
            return text
        try:
            value = ast.literal_eval(expr)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return value if isinstance(value, (int, float, bool, list, dict)) and value is not Ellipsis else None

    def constants(self, module: str) -> Iterator[str]:
        """String constants of a module that are not docstrings or bare string statements."""
        tree = self.tree(module)
        if tree is None:
            return
        bare = {
            id(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare:
                yield node.value
            elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                text = self.string(module, node)
                if text:
                    yield text

    def urls(self, modules: Iterable[str]) -> list[str]:
        """http(s)/ws(s) URL constants, in order of appearance, without duplicates."""
        texts = (t.strip() for module in modules for t in self.constants(module))
        return list(dict.fromkeys(t for t in texts if _URL.match(t) and not _NOT_ENDPOINT.search(t)))

    def env_vars(self, modules: Iterable[str]) -> list[str]:
        """Environment-variable-like constants, in order of appearance, without duplicates."""
        return list(dict.fromkeys(t for module in modules for t in self.constants(module) if is_env_var(t)))

    # ------------------------------------------------------------------ schemas

    def model_schema(self, cls: ClassInfo) -> dict[str, Any]:
        """JSON schema of a pydantic model from its annotated fields (own and package bases)."""
        props: dict[str, Any] = {}
        required: list[str] = []
        for item in reversed(self.mro(cls)):  # bases first, so subclasses override
            if not isinstance(item, ClassInfo):
                continue
            for node in item.node.body:
                if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                    continue
                name = node.target.id
                if name.startswith("_") or name == "model_config" or _is_classvar(node.annotation):
                    continue
                spec = self.annotation_schema(item.module, node.annotation)
                is_required = node.value is None
                if isinstance(node.value, ast.Call) and _call_name(node.value) == "Field":
                    default = _field_default(node.value)
                    is_required = default is None and not _has_kw(node.value, "default_factory")
                    is_required = is_required or (
                        isinstance(default, ast.Constant) and default.value is Ellipsis
                    )
                    desc = self.string(item.module, _kw(node.value, "description"))
                    if desc:
                        spec["description"] = clean_text(desc)
                    value = self.literal(item.module, default)
                    if value is not None:
                        spec["default"] = value
                elif node.value is not None:
                    value = self.literal(item.module, node.value)
                    if value is not None:
                        spec["default"] = value
                props[name] = spec
                if is_required and name not in required:
                    required.append(name)
                elif not is_required and name in required:
                    required.remove(name)
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        return schema

    def signature_schema(
        self,
        module: str,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        *,
        skip: frozenset[str] = frozenset({"self", "cls", "run_manager", "callbacks", "config"}),
    ) -> dict[str, Any]:
        """JSON schema of a function's parameters, with descriptions from its docstring's Args section."""
        descriptions = doc_params(ast.get_docstring(fn) or "")
        args = [*fn.args.posonlyargs, *fn.args.args]
        defaults: list[ast.expr | None] = [None] * (len(args) - len(fn.args.defaults)) + list(
            fn.args.defaults
        )
        pairs = [
            *zip(args, defaults, strict=True),
            *zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True),
        ]
        props: dict[str, Any] = {}
        required: list[str] = []
        for arg, default in pairs:
            if arg.arg in skip:
                continue
            spec = self.annotation_schema(module, arg.annotation) if arg.annotation is not None else {}
            if arg.arg in descriptions:
                spec["description"] = descriptions[arg.arg]
            value = self.literal(module, default)
            if value is not None:
                spec["default"] = value
            props[arg.arg] = spec
            if default is None:
                required.append(arg.arg)
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        return schema

    def annotation_schema(self, module: str, expr: ast.expr | None, _depth: int = 0) -> dict[str, Any]:
        """JSON-schema-like type of an annotation (``Optional[list[str]]`` -> array of string)."""
        if expr is None or _depth > 6:
            return {}
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):  # forward reference
            try:
                return self.annotation_schema(module, ast.parse(expr.value, mode="eval").body, _depth + 1)
            except SyntaxError:
                return {}
        if isinstance(expr, ast.Constant) and expr.value is None:
            return {"type": "null"}
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            return self._union(module, [expr.left, expr.right], _depth)
        head = expr.value if isinstance(expr, ast.Subscript) else expr
        name = (self.qualify(module, head) or ast.unparse(head)).rpartition(".")[2]
        args: list[ast.expr] = []
        if isinstance(expr, ast.Subscript):
            sl = expr.slice
            args = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if name in {"Optional"} and args:
            return self.annotation_schema(module, args[0], _depth + 1)
        if name == "Union":
            return self._union(module, args, _depth)
        if name == "Annotated" and args:
            return self.annotation_schema(module, args[0], _depth + 1)
        if name == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            spec: dict[str, Any] = {"enum": values}
            if values and all(isinstance(v, str) for v in values):
                spec["type"] = "string"
            return spec
        if name in _ARRAYS:
            spec = {"type": "array"}
            if args:
                items = self.annotation_schema(module, args[0], _depth + 1)
                if items:
                    spec["items"] = items
            return spec
        if name in _SCALARS:
            return dict(_SCALARS[name])
        return {}

    def _union(self, module: str, members: list[ast.expr], depth: int) -> dict[str, Any]:
        flat: list[ast.expr] = []
        stack = list(members)
        while stack:
            m = stack.pop(0)
            if isinstance(m, ast.BinOp) and isinstance(m.op, ast.BitOr):
                stack[:0] = [m.left, m.right]
            else:
                flat.append(m)
        specs = [self.annotation_schema(module, m, depth + 1) for m in flat]
        specs = [s for s in specs if s.get("type") != "null"]
        if len(specs) == 1:
            return specs[0]
        if all(specs):
            return {"anyOf": specs}
        return {}


def doc_params(doc: str) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section or Sphinx ``:param x:`` lines."""
    out: dict[str, str] = {}
    for match in _SPHINX_PARAM.finditer(doc):
        out[match.group(1)] = clean_text(match.group(2))
    lines = doc.expandtabs().splitlines()
    in_args = False
    current: str | None = None
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        if re.match(r"^(Args|Arguments|Parameters|Params)\s*:\s*$", stripped):
            in_args, current = True, None
            base_indent = -1
            continue
        if not in_args:
            continue
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if re.match(r"^[A-Z][A-Za-z ]+:\s*$", stripped) and (base_indent < 0 or indent < base_indent):
            break  # next section (Returns:, Raises:, ...)
        arg = _DOC_ARG.match(line)
        if arg and (base_indent < 0 or indent <= base_indent):
            base_indent = indent
            current = arg.group(1)
            out[current] = clean_text(arg.group(3))
        elif current is not None and indent > base_indent:
            out[current] = clean_text(f"{out[current]} {stripped}")
    return out


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _has_kw(call: ast.Call, name: str) -> bool:
    return any(k.arg == name for k in call.keywords)


def _field_default(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return _kw(call, "default")


def _is_classvar(annotation: ast.expr) -> bool:
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return ast.unparse(head).rpartition(".")[2] == "ClassVar"
