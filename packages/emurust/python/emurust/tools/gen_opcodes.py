#!/usr/bin/env python3
"""Transpile PyBoy 2.8.1's ``pyboy/core/opcodes.py`` into ``packages/emurust/src/opcodes.rs``.

PyBoy's opcode module is itself generated (by ``opcodes_gen.py`` from an HTML table that cannot be
fetched offline), and it uses a tiny subset of Python: assignments, augmented assignments, if/else,
conditional expressions, integer arithmetic and bit operations, and calls to
``cpu.mb.getitem/setitem/getitem_io_ports/setitem_io_ports``. This script walks it with ``ast`` and
emits one Rust function per Python function, with the same name, plus the dispatch
(``execute_opcode``), ``OPCODE_LENGTHS`` and ``CPU_COMMANDS``.

Integer semantics (why the output looks the way it does):

* Python ints are unbounded; Cython compiles the module with the C types of ``opcodes.pxd``
  (locals ``a, b, c, t: int32_t``, ``flag: uint8_t``; DAA: ``t: int``, ``corr: uint16_t``) and
  ``cpu.pxd``. All maths is done in ``i32`` here, and a value is truncated exactly where a C store
  truncates: assigning to a ``uint8_t``/``uint16_t`` local, passing an address to
  ``getitem/setitem(uint16_t, uint8_t)``.
* CPU fields are stored with the convention of the Rust crate (``u8`` registers, ``u16`` HL/SP/PC,
  ``u64`` cycles). PyBoy declares them wider (``int16_t``/``int``) but every value it stores is
  masked before any non-linear use; ``emurust.tools.cpu_vectors`` checks that claim on every
  opcode against the Python module with unbounded ints (the registers after one instruction).
* ``cpu.cycles`` only ever grows by constants and wraps (``wrapping_add``) so that a hostile save
  state with a huge cycle counter cannot panic a debug build.

Illegal opcodes (``no_opcode``) and ``BRK`` (0xDB, PyBoy's breakpoint trap; emurust has no
breakpoints) return ``Err(EmuError::IllegalOpcode)``: PyBoy would spin forever without advancing
cycles, which cannot be mirrored. The CGB-only branch of ``STOP_10`` (speed switch) is dropped.

Usage: ``python -m emurust.tools.gen_opcodes [--source DIR] [--out FILE]``. ``DIR`` is the
``pyboy/core`` folder of an installed pyboy 2.8.1 (found automatically when omitted). The output
is deterministic; ``packages/emurust/tests/test_opcodes_generated.py`` regenerates and compares.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import os
import re
import sys
from pathlib import Path

PYBOY_VERSION = "2.8.1"

# Rust types of the CPU fields the opcodes touch (crate convention; see module docstring).
U8_FIELDS = {"A", "F", "B", "C", "D", "E", "interrupt_enable_delay", "memory_access_offset"}
U8_FIELDS |= {"interrupts_flag_register", "interrupts_enabled_register"}
U16_FIELDS = {"HL", "SP", "PC"}
BOOL_FIELDS = {"bail", "halted", "halted_during_ei", "interrupt_master_enable"}
FLAG_CONSTS = {"FLAGC", "FLAGH", "FLAGN", "FLAGZ"}
MB_CALLS = {"getitem", "getitem_io_ports", "setitem", "setitem_io_ports"}
ILLEGAL = {"no_opcode", "BRK"}

BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">="}


class Unsupported(Exception):
    pass


def find_source() -> Path:
    """The ``pyboy/core`` folder: PYBOY_CORE_DIR, else this interpreter's installed pyboy."""
    env = os.environ.get("PYBOY_CORE_DIR")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("pyboy")
    if spec is not None and spec.submodule_search_locations:
        core = Path(list(spec.submodule_search_locations)[0]) / "core"
        if (core / "opcodes.py").exists():
            return core
    raise SystemExit(
        "pyboy 2.8.1 sources not found: pip install pyboy==2.8.1, or pass --source / set "
        "PYBOY_CORE_DIR to its pyboy/core folder"
    )


def parse_pxd_locals(pxd: str) -> dict[str, dict[str, str]]:
    """Function name -> {local: C type} from the ``@cython.locals(...)`` line above each cdef."""
    out: dict[str, dict[str, str]] = {}
    pending: dict[str, str] = {}
    for line in pxd.splitlines():
        m = re.match(r"@cython\.locals\((.*)\)\s*$", line.strip())
        if m:
            pending = dict(
                (k.strip(), v.strip()) for k, v in (p.split("=") for p in m.group(1).split(","))
            )
            continue
        m = re.match(r"cdef\s+\w+\s+(\w+)\(", line.strip())
        if m:
            out[m.group(1)] = pending
            pending = {}
    return out


class FuncTranslator:
    def __init__(self, name: str, params: list[str], local_types: dict[str, str]):
        self.name = name
        self.params = params
        self.local_types = local_types
        self.locals_used: list[str] = []

    # ----- expressions: return (rust code, kind) with kind "i32" or "bool"
    def expr(self, node: ast.expr) -> tuple[str, str]:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return ("true" if node.value else "false"), "bool"
            if isinstance(node.value, int):
                return self.literal(node), "i32"
            raise Unsupported(f"constant {node.value!r}")
        if isinstance(node, ast.Name):
            if node.id in FLAG_CONSTS:
                return node.id, "i32"
            if node.id == "v" and "v" in self.params:
                return "v", "i32"
            if node.id in self.local_types:
                self.use_local(node.id)
                return node.id, "i32"
            raise Unsupported(f"name {node.id}")
        if isinstance(node, ast.Attribute):
            return self.field_read(node)
        if isinstance(node, ast.BinOp):
            op = BINOPS.get(type(node.op))
            if op is None:
                raise Unsupported(f"binop {type(node.op).__name__}")
            lhs = self.as_int(node.left)
            rhs = self.as_int(node.right)
            return f"({lhs} {op} {rhs})", "i32"
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Invert):
                return f"(!{self.as_int(node.operand)})", "i32"
            if isinstance(node.op, ast.USub):
                return f"(-{self.as_int(node.operand)})", "i32"
            if isinstance(node.op, ast.Not):
                return f"(!{self.as_bool(node.operand)})", "bool"
            raise Unsupported("unary op")
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise Unsupported("chained comparison")
            op = CMPOPS[type(node.ops[0])]
            lhs = self.as_int(node.left)
            rhs = self.as_int(node.comparators[0])
            return f"({lhs} {op} {rhs})", "bool"
        if isinstance(node, ast.IfExp):
            cond = self.as_bool(node.test)
            return (
                f"(if {cond} {{ {self.as_int(node.body)} }} else {{ {self.as_int(node.orelse)} }})",
                "i32",
            )
        if isinstance(node, ast.Call):
            fn = self.mb_call_name(node)
            if fn in ("getitem", "getitem_io_ports"):
                (arg,) = node.args
                # getitem(uint16_t) -> uint8_t: the C call truncates the address.
                return f"(mb.{fn}({self.as_int(arg)} as u16) as i32)", "i32"
            raise Unsupported(f"call {fn} in an expression")
        raise Unsupported(f"expression {type(node).__name__}")

    @staticmethod
    def literal(node: ast.Constant) -> str:
        seg = getattr(node, "_src", None)
        # Keep PyBoy's spelling (0b00010000, 0xFF, 0b1111_1000): the same syntax is valid Rust.
        if seg and re.fullmatch(r"0[xXbB][0-9a-fA-F_]+|[0-9][0-9_]*", seg):
            return seg
        return str(node.value)

    def as_int(self, node: ast.expr) -> str:
        code, kind = self.expr(node)
        return f"({code} as i32)" if kind == "bool" else code

    def as_bool(self, node: ast.expr) -> str:
        code, kind = self.expr(node)
        return code if kind == "bool" else f"({code} != 0)"

    def use_local(self, name: str) -> None:
        if name not in self.locals_used:
            self.locals_used.append(name)

    @staticmethod
    def is_cpu_attr(node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "cpu"
        )

    def field_read(self, node: ast.Attribute) -> tuple[str, str]:
        if self.is_cpu_attr(node):
            f = node.attr
            if f in U8_FIELDS or f in U16_FIELDS:
                return f"(mb.cpu.{f} as i32)", "i32"
            if f in BOOL_FIELDS:
                return f"mb.cpu.{f}", "bool"
            raise Unsupported(f"cpu field {f}")
        if (
            isinstance(node.value, ast.Attribute)
            and self.is_cpu_attr(node.value)
            and node.value.attr == "mb"
            and node.attr == "cgb"
        ):
            return "false", "bool"  # DMG only
        raise Unsupported(f"attribute {ast.unparse(node)}")

    def mb_call_name(self, node: ast.Call) -> str:
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Attribute)
            and self.is_cpu_attr(f.value)
            and f.value.attr == "mb"
            and f.attr in MB_CALLS
        ):
            return f.attr
        raise Unsupported(f"call {ast.unparse(node)}")

    # ----- statements
    def store(self, target: ast.expr, value_code: str, value_kind: str) -> str:
        if isinstance(target, ast.Name):
            name = target.id
            ctype = self.local_types.get(name)
            if ctype is None:
                raise Unsupported(f"untyped local {name} in {self.name}")
            self.use_local(name)
            v = f"({value_code} as i32)" if value_kind == "bool" else value_code
            if ctype == "uint8_t":
                return f"{name} = {v} as u8 as i32;"
            if ctype == "uint16_t":
                return f"{name} = {v} as u16 as i32;"
            if ctype in ("int32_t", "int"):
                return f"{name} = {v};"
            raise Unsupported(f"local type {ctype}")
        if self.is_cpu_attr(target):
            f = target.attr
            if f in BOOL_FIELDS:
                v = value_code if value_kind == "bool" else f"({value_code} != 0)"
                return f"mb.cpu.{f} = {v};"
            v = f"({value_code} as i32)" if value_kind == "bool" else value_code
            if f in U8_FIELDS:
                return f"mb.cpu.{f} = {v} as u8;"
            if f in U16_FIELDS:
                return f"mb.cpu.{f} = {v} as u16;"
            raise Unsupported(f"store to cpu.{f}")
        raise Unsupported(f"store target {ast.unparse(target)}")

    def stmt(self, node: ast.stmt, ind: str) -> list[str]:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise Unsupported("multiple targets")
            code, kind = self.expr(node.value)
            return [ind + self.store(node.targets[0], code, kind)]
        if isinstance(node, ast.AugAssign):
            t = node.target
            if self.is_cpu_attr(t) and t.attr == "cycles":
                if not (isinstance(node.op, ast.Add) and isinstance(node.value, ast.Constant)):
                    raise Unsupported("cycles update other than += constant")
                return [ind + f"mb.cpu.cycles = mb.cpu.cycles.wrapping_add({node.value.value});"]
            op = BINOPS.get(type(node.op))
            if op is None:
                raise Unsupported("aug op")
            cur = self.as_int(t)
            rhs = self.as_int(node.value)
            return [ind + self.store(t, f"({cur} {op} {rhs})", "i32")]
        if isinstance(node, ast.If):
            test = node.test
            if (
                isinstance(test, ast.Attribute)
                and test.attr == "cgb"
                and ast.unparse(test) == "cpu.mb.cgb"
            ):
                # CGB-only branch (speed switch on STOP) dropped: emurust emulates DMG only.
                if node.orelse:
                    raise Unsupported("else on a cgb branch")
                return [ind + "// `if cpu.mb.cgb:` (CGB speed switch) dropped: DMG only."]
            out = [ind + f"if {self.as_bool(test)} {{"]
            for s in node.body:
                out += self.stmt(s, ind + "    ")
            if node.orelse:
                out.append(ind + "} else {")
                for s in node.orelse:
                    out += self.stmt(s, ind + "    ")
            out.append(ind + "}")
            return out
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if ast.unparse(call.func) == "logger.critical":
                return [ind + f"// logger.critical({ast.unparse(call.args[0])}): unreachable."]
            fn = self.mb_call_name(call)
            if fn in ("setitem", "setitem_io_ports"):
                addr, val = call.args
                # Evaluate the arguments before the call (Python's order), truncating like the C
                # call setitem(uint16_t, uint8_t).
                return [
                    ind + "{",
                    ind + f"    let addr = {self.as_int(addr)} as u16;",
                    ind + f"    let value = {self.as_int(val)} as u8;",
                    ind + f"    mb.{fn}(addr, value);",
                    ind + "}",
                ]
            raise Unsupported(f"statement call {fn}")
        raise Unsupported(f"statement {type(node).__name__}: {ast.unparse(node)}")

    def function(self, fdef: ast.FunctionDef) -> list[str]:
        body: list[str] = []
        for s in fdef.body:
            body += self.stmt(s, "    ")
        comment = getattr(fdef, "_comment", "")
        args = "mb: &mut Motherboard" + (", v: i32" if "v" in self.params else "")
        out = []
        if comment:
            out.append(f"/// {comment}")
        out.append(f"fn {fdef.name}({args}) {{")
        for name in self.locals_used:
            out.append(f"    let mut {name}: i32 = 0;")
        out += body
        out.append("}")
        return out


def attach_sources(tree: ast.AST, src: str) -> None:
    lines = src.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.lineno == node.end_lineno:
            # (ast.get_source_segment re-splits the whole file per call: far too slow here.)
            seg = lines[node.lineno - 1].encode()[node.col_offset : node.end_col_offset]
            node._src = seg.decode()  # type: ignore[attr-defined]
        if isinstance(node, ast.FunctionDef):
            m = re.search(r"#\s*(.*)$", lines[node.lineno - 1])
            node._comment = m.group(1).strip() if m else ""  # type: ignore[attr-defined]


def dispatch_table(fdef: ast.FunctionDef) -> list[tuple[int, str, bool]]:
    """(opcode, function, takes v) from execute_opcode's if/elif chain."""
    table = []
    node = fdef.body[0]
    while node is not None:
        assert isinstance(node, ast.If), ast.unparse(node)
        cmp = node.test
        assert isinstance(cmp, ast.Compare) and ast.unparse(cmp.left) == "opcode"
        opcode = cmp.comparators[0].value
        (ret,) = node.body
        call = ret.value
        table.append((opcode, call.func.id, len(call.args) == 2))
        node = node.orelse[0] if node.orelse else None
    return table


def writes_memory(fdef: ast.FunctionDef) -> bool:
    """True when the opcode function may write memory (calls ``cpu.mb.setitem`` or
    ``setitem_io_ports``): the only way an instruction that does not end a block can set ``bail``."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in ("setitem", "setitem_io_ports") for n in ast.walk(fdef))


def module_level_list(tree: ast.Module, name: str) -> list:
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == name:
            value = node.value
            if isinstance(value, ast.Call):  # array.array("B", [...])
                value = value.args[1]
            return [ast.literal_eval(e) for e in value.elts]
    raise SystemExit(f"{name} not found in opcodes.py")


def generate(core: Path) -> str:
    src_path = core / "opcodes.py"
    pxd_path = core / "opcodes.pxd"
    src = src_path.read_text()
    pxd = pxd_path.read_text()
    tree = ast.parse(src)
    attach_sources(tree, src)
    local_types = parse_pxd_locals(pxd)

    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    by_name = {f.name: f for f in funcs}
    table = dispatch_table(by_name["execute_opcode"])
    lengths = module_level_list(tree, "OPCODE_LENGTHS")
    commands = module_level_list(tree, "CPU_COMMANDS")
    if len(lengths) != 512 or len(commands) != 512 or len(table) != 512:
        raise SystemExit("unexpected table sizes in opcodes.py")

    sha_py = hashlib.sha256(src.encode()).hexdigest()
    sha_pxd = hashlib.sha256(pxd.encode()).hexdigest()
    out: list[str] = [
        f"//! Translated from PyBoy {PYBOY_VERSION} pyboy/core/opcodes.py (LGPL-3.0).",
        "//!",
        "//! GENERATED by emurust.tools.gen_opcodes -- do not edit; rerun the generator instead.",
        f"//! Source: pyboy/core/opcodes.py sha256 {sha_py}",
        f"//!         pyboy/core/opcodes.pxd sha256 {sha_pxd}",
        "//!",
        "//! One function per PyBoy opcode function (same names, PyBoy's order of memory accesses",
        "//! and cycle increments, which the catch-up timing depends on), computed in i32 and",
        "//! truncated where PyBoy's C types truncate. `execute_opcode` is PyBoy's dispatch; illegal",
        "//! opcodes and BRK (0xDB) return false (PyBoy would spin forever; the caller raises).",
        "",
        "// Generated layout, not rustfmt's: `cargo fmt` leaves this file alone.",
        "#![cfg_attr(rustfmt, rustfmt::skip)]",
        "#![allow(non_snake_case, unused_mut, unused_assignments, unused_parens, unused_variables)]",
        "#![allow(clippy::all)]",
        "",
        "use crate::mb::Motherboard;",
        "",
        "const FLAGC: i32 = 4;",
        "const FLAGH: i32 = 5;",
        "const FLAGN: i32 = 6;",
        "const FLAGZ: i32 = 7;",
        "",
    ]
    for f in funcs:
        if f.name in ILLEGAL or f.name == "execute_opcode":
            continue
        params = [a.arg for a in f.args.args]
        if params[0] != "cpu" or params[1:] not in ([], ["v"]):
            raise SystemExit(f"unexpected parameters in {f.name}")
        tr = FuncTranslator(f.name, params, local_types.get(f.name, {}))
        try:
            out += tr.function(f)
        except Unsupported as e:
            raise SystemExit(f"{f.name}: unsupported construct: {e}") from None
        out.append("")

    out += [
        "/// One entry of PyBoy's dispatch: runs the opcode with the two bytes after it as fetched;",
        "/// false for an illegal opcode.",
        "pub type Handler = fn(&mut Motherboard, u16, u16) -> bool;",
        "",
        "/// no_opcode, and BRK (0xDB): PyBoy adds no cycles and loops forever.",
        "fn illegal(_: &mut Motherboard, _: u16, _: u16) -> bool { false }",
        "",
        "/// PyBoy's `execute_opcode` if/elif chain as a table indexed by opcode (0x000-0x0FF, or",
        "/// 0x100 + the byte after a 0xCB prefix). Each entry builds PyBoy's immediate `v` from",
        "/// `pc2`/`pc3` by the opcode's `OPCODE_LENGTHS` entry (2: `pc2`, 3: `(pc3 << 8) + pc2`,",
        "/// Cython `uint16_t` widened to `int v`) and calls the opcode function, which is inlined",
        "/// into it: one indirect call per instruction (a `match` costs a jump table plus a call).",
        "pub static HANDLERS: [Handler; 512] = [",
    ]
    by_opcode = {opcode: (fn, takes_v) for opcode, fn, takes_v in table}
    for opcode in range(512):
        fn, takes_v = by_opcode[opcode]
        if fn in ILLEGAL:
            out.append("    illegal,")
            continue
        if not takes_v:
            args = "mb"
        elif opcode < 0x100 and lengths[opcode] == 2:
            args = "mb, pc2 as i32"
        elif opcode < 0x100 and lengths[opcode] == 3:
            args = "mb, ((pc3 << 8) + pc2) as i32"
        else:
            args = "mb, 0"
        out.append(f"    |mb, pc2, pc3| {{ {fn}({args}); true }},")
    out += [
        "];",
        "",
        "/// `opcodes.execute_opcode(cpu, opcode, v)`: `opcode` is 0x000-0x0FF or 0x100 + the byte",
        "/// after a 0xCB prefix; `pc2`/`pc3` the two bytes after the opcode as fetched.",
        "/// Returns false for an illegal opcode (PC unchanged; `cpu::fetch_and_execute` builds the",
        "/// error): a bool, not a `Result`, because this runs once per instruction.",
        "#[inline(always)]",
        "pub fn execute_opcode(mb: &mut Motherboard, opcode: u16, pc2: u16, pc3: u16) -> bool {",
        "    HANDLERS[(opcode & 0x1FF) as usize](mb, pc2, pc3)",
        "}",
        "",
        "/// `opcodes.OPCODE_LENGTHS`: instruction length in bytes (0 for illegal opcodes).",
        "pub const OPCODE_LENGTHS: [u8; 512] = [",
    ]
    for i in range(0, 512, 16):
        out.append("    " + ", ".join(str(x) for x in lengths[i : i + 16]) + ",")
    out += [
        "];",
        "",
        "/// Per opcode (as `HANDLERS` is indexed): true when PyBoy's function may write memory",
        "/// (`setitem` or `setitem_io_ports`). Only a write can set `bail` in an instruction that",
        "/// does not end a decoded block, so `blocks` checks `bail` after those alone.",
        "pub const WRITES_MEMORY: [bool; 512] = [",
    ]
    writes = [fn not in ILLEGAL and writes_memory(by_name[fn]) for fn, _ in
              (by_opcode[o] for o in range(512))]
    for i in range(0, 512, 16):
        out.append("    " + ", ".join("true" if w else "false" for w in writes[i : i + 16]) + ",")
    out += [
        "];",
        "",
        "/// `opcodes.CPU_COMMANDS`: mnemonics, for messages.",
        "pub const CPU_COMMANDS: [&str; 512] = [",
    ]
    for c in commands:
        out.append(f'    "{c}",')
    out += ["];", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, help="pyboy/core folder of pyboy 2.8.1")
    ap.add_argument("--out", type=Path, default=None,
                    help="default: the crate's src/opcodes.rs")
    args = ap.parse_args(argv)
    if args.out is None:
        from emurust.tools import crate_dir

        args.out = crate_dir() / "src" / "opcodes.rs"
    core = args.source or find_source()
    text = generate(core)
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text.splitlines())} lines) from {core}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
