"""Parsing, printing, bitcode and verification of modules."""

from __future__ import annotations

import pytest

import llvmaccel
from conftest import AXPY_IR


def test_round_trip_text(axpy_module):
    text = str(axpy_module)
    again = llvmaccel.parse_ir(text)
    assert str(again).split("\n", 2)[2] == text.split("\n", 2)[2]
    assert "define void @axpy(" in text


def test_bitcode_round_trip(axpy_module, tmp_path):
    bc = axpy_module.to_bitcode()
    assert bc[:4] == b"BC\xc0\xde"
    path = tmp_path / "axpy.bc"
    path.write_bytes(bc)
    loaded = llvmaccel.load_module(path)
    assert [f.name for f in loaded.functions] == ["axpy"]
    assert [f.name for f in llvmaccel.parse_ir(bc).functions] == ["axpy"]


def test_load_text_file(tmp_path):
    path = tmp_path / "axpy.ll"
    path.write_text(AXPY_IR)
    module = llvmaccel.load_module(path)
    assert module.name == str(path)


def test_functions_and_signatures(axpy_module):
    (fn,) = axpy_module.functions
    assert fn == llvmaccel.Function("axpy", False, "void", ("ptr", "ptr", "float", "i64"),
                                    (False, False, False, False))
    assert axpy_module.function("axpy") is not None
    with pytest.raises(KeyError):
        axpy_module.function("nope")


def test_parse_error_has_line_and_column():
    with pytest.raises(llvmaccel.IRParseError) as info:
        llvmaccel.parse_ir("define void @f() {\nentry:\n  ret i32 %x\n}\n")
    err = info.value
    assert err.line == 3
    assert err.column > 0
    assert "line 3" in str(err)


def test_garbage_bytes_raise_parse_error():
    with pytest.raises(llvmaccel.IRParseError):
        llvmaccel.parse_ir(b"BC\xc0\xde" + b"\x00" * 64)
    with pytest.raises(llvmaccel.IRParseError):
        llvmaccel.parse_ir("\x00\xff garbage")


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        llvmaccel.load_module(tmp_path / "missing.ll")


def test_verify_error():
    bad = llvmaccel.parse_ir(
        "define i32 @f() {\nentry:\n  br label %a\na:\n"
        "  %x = add i32 %y, 1\n  %y = add i32 %x, 1\n  ret i32 %x\n}\n"
    )
    with pytest.raises(llvmaccel.VerifyError, match="does not dominate"):
        bad.verify()


def test_clone_is_independent(axpy_module):
    copy = axpy_module.clone()
    llvmaccel.run_passes(copy, "default<O3>")
    assert str(copy) != str(axpy_module)
    axpy_module.verify()
