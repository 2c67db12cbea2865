#!/usr/bin/env python3
"""Writes the .npy files that tests/engine/io/npy_test.cc reads (tests/engine/io/golden/).

Regenerate (needs numpy; the Debian python3-numpy package works):

    /usr/bin/python3 tests/engine/io/gen_npy_golden.py

Every file is written by numpy.save itself, so the tests see exactly the bytes
numpy produces for each dtype, byte order and memory order. For each accepted
file NAME.npy there is NAME.expected.npy: the same array as numpy converts it
(a.astype(<target>, order="C")), little-endian and C order, in one
of the dtypes Tally stores (bool, int32, int64, float32, float64). The C++ test
checks that reading NAME.npy gives exactly the bytes of NAME.expected.npy, and
spells out the values of a few files literally as well.

Files named reject_*.npy must be rejected; their expected error text is in the
test. Output is deterministic (no random data). Generated with numpy 1.24.2.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "golden")

# The dtype Tally reads each kind/size as.
TARGET = {
    ("b", 1): "|b1",
    ("i", 1): "<i4", ("i", 2): "<i4", ("i", 4): "<i4", ("i", 8): "<i8",
    ("u", 1): "<i4", ("u", 2): "<i4", ("u", 4): "<i8", ("u", 8): "<i8",
    ("f", 2): "<f4", ("f", 4): "<f4", ("f", 8): "<f8",
}


def save(name, a):
    np.save(os.path.join(OUT, name + ".npy"), a, allow_pickle=True)


def accepted(name, a):
    """Saves `a` as NAME.npy and its conversion as NAME.expected.npy."""
    save(name, a)
    target = np.dtype(TARGET[(a.dtype.kind, a.dtype.itemsize)])
    expected = a.astype(target, order="C")
    assert expected.dtype.str in ("|b1", "<i4", "<i8", "<f4", "<f8")
    assert expected.flags.c_contiguous
    if a.dtype.kind != "f":
        assert (expected.astype(object) == a.astype(object)).all(), name  # lossless
    save(name + ".expected", expected)


def values(dtype):
    """Extremes and a few ordinary values of an integer or float dtype (6 values)."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        mid = 1 if dt.kind == "u" else -1
        return [info.min, info.max, 0, 1, mid, info.max // 3]
    info = np.finfo(dt)
    return [info.min, info.max, 0.0, -1.5, info.tiny, info.eps]


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".npy"):
            os.remove(os.path.join(OUT, f))

    # Every integer and float dtype in both byte orders (one-byte types have
    # none), shape (2, 3), C order.
    for kind, sizes in (("i", (1, 2, 4, 8)), ("u", (1, 2, 4, 8)), ("f", (2, 4, 8))):
        for size in sizes:
            orders = ("|",) if size == 1 else ("<", ">")
            for order in orders:
                dt = np.dtype(f"{order}{kind}{size}")
                assert dt.str == f"{order}{kind}{size}", dt.str
                tag = {"|": "", "<": "_le", ">": "_be"}[order]
                name = f"{dt.name}{tag}"
                if kind == "u" and size == 8:
                    # Largest uint64 that fits in int64; the overflow is a reject case.
                    v = [0, 1, 2**63 - 1, 7, 2**32, 2**63 - 2]
                else:
                    v = values(dt)
                accepted(name, np.array(v, dtype=dt).reshape(2, 3))
    accepted("bool", np.array([[True, False, True], [False, False, True]]))

    # Fortran order, rank 2 and 3, as np.asfortranarray and as a transpose
    # saved directly (numpy writes both with fortran_order: True).
    accepted("fortran_int16_be_rank2",
             np.asfortranarray(np.arange(-6, 6, dtype=">i2").reshape(3, 4)))
    accepted("fortran_float32_le_rank3",
             np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4) / 4))
    accepted("fortran_float16_be_rank3",
             np.asfortranarray(np.arange(24, dtype=">f2").reshape(4, 3, 2) - 12))
    accepted("fortran_uint8_transpose",
             np.arange(1, 13, dtype="u1").reshape(3, 4).T)
    accepted("fortran_bool_transpose",
             (np.arange(6).reshape(2, 3) % 4 == 1).T)
    accepted("fortran_int64_rank3_transpose",
             np.arange(60, dtype="<i8").reshape(3, 4, 5).transpose(2, 1, 0))
    accepted("fortran_float64_be_rank4",
             np.asfortranarray(np.arange(120, dtype=">f8").reshape(2, 3, 4, 5)))

    # Empty arrays and a scalar.
    accepted("empty_uint8", np.zeros((0,), dtype="u1"))
    accepted("empty_int16_be_0x3", np.zeros((0, 3), dtype=">i2"))
    # (numpy writes an empty array as C order even from np.asfortranarray.)
    accepted("empty_float16_2x0", np.asfortranarray(np.zeros((2, 0), dtype="<f2")))
    accepted("scalar_int16_be", np.array(-300, dtype=">i2"))

    # Half-precision special values, both byte orders.
    half_bits = [
        0x0001,  # smallest subnormal, 2^-24
        0x03FF,  # largest subnormal
        0x0400,  # smallest normal, 2^-14
        0x7BFF,  # largest finite, 65504
        0x7C00,  # +inf
        0xFC00,  # -inf
        0x8000,  # -0.0
        0x0000,  # +0.0
        0x7E00,  # quiet NaN
        0xFE01,  # negative NaN with a payload
        0x3C00,  # 1.0
        0x8201,  # negative subnormal
    ]
    for order, tag in (("<", "le"), (">", "be")):
        h = np.array(half_bits, dtype="<u2").view("<f2").astype(f"{order}f2")
        accepted(f"half_special_{tag}", h)

    # uint64 values above int64's range, little- and big-endian (first bad
    # element at flat index 2), and in Fortran order: bad values at [0, 2]
    # (C-order element 2, file position 4) and [1, 0] (C-order element 3, file
    # position 1); the error names the first in C order, [0, 2].
    save("reject_uint64_overflow_le", np.array([0, 5, 2**63, 2**64 - 1], dtype="<u8"))
    save("reject_uint64_overflow_be", np.array([0, 5, 2**64 - 1, 2**63], dtype=">u8"))
    f = np.zeros((2, 3), dtype="<u8")
    f[0, 2] = 2**63 + 5
    f[1, 0] = 2**64 - 1
    save("reject_uint64_overflow_fortran", np.asfortranarray(f))

    # Still rejected.
    save("reject_complex64", np.array([1 + 2j, 3], dtype="<c8"))
    save("reject_complex128_be", np.array([1 + 2j], dtype=">c16"))
    save("reject_object", np.array([1, None, "x"], dtype=object))
    save("reject_structured", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]))
    save("reject_bytes", np.array([b"ab", b"c"], dtype="S2"))
    save("reject_unicode", np.array(["ab", "c"], dtype="<U2"))
    save("reject_datetime", np.array(["2024-01-01"], dtype="<M8[D]"))
    save("reject_timedelta", np.array([5], dtype="<m8[s]"))
    save("reject_void", np.zeros(2, dtype="V4"))
    save("reject_longdouble", np.zeros(2, dtype=np.longdouble))


if __name__ == "__main__":
    main()
