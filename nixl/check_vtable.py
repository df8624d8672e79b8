#!/usr/bin/env python3
"""Compares the virtual functions of NIXL's nixlBackendEngine, slot by slot, as a NIXL build's
plugin has them and as libplugin_GIOURING.so was compiled from nixl/abi/ (ctest nixl.vtable).

NIXL's core calls a backend only through that vtable: a slot moved, added or retyped upstream
would call the wrong function of our plugin. The wheels ship no headers, but their plugins are
not stripped, so the order can be read back from a derived engine's vtable: each slot is a
relocation naming the function (the derived class's override, or nixlBackendEngine's default;
pure virtuals are always overridden there). Names are compared demangled, without their class,
so parameter types count too.

    check_vtable.py NIXL_PLUGIN.so NIXL_ENGINE_CLASS OUR_PLUGIN.so OUR_ENGINE_CLASS
    e.g. check_vtable.py .../plugins/libplugin_POSIX.so nixlPosixEngine \
             build/nixl/plugins/libplugin_GIOURING.so gio_nixl::engine
Exit 0 when the slots match, 1 with the differing slots listed, 2 when a library cannot be read.
"""
import re
import subprocess
import sys

BASE = "nixlBackendEngine"


def run(*cmd):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"check_vtable: {' '.join(cmd)} failed: {e}")


def demangle(names):
    out = run("c++filt", *names) if names else ""
    return out.splitlines()


def symbols(lib):
    """Mangled name -> (address, size), and function address -> mangled name."""
    by_name, by_addr = {}, {}
    for line in run("nm", "-S", "--defined-only", lib).splitlines():
        f = line.split()
        if len(f) == 4:
            addr, size, kind, name = int(f[0], 16), int(f[1], 16), f[2], f[3]
            by_name[name] = (addr, size)
            if kind in "tTwW":
                # Identical functions folded into one (GCC's -fipa-icf at -O2: two methods that
                # both return NIXL_SUCCESS) share an address: a slot is any of its names.
                by_addr.setdefault(addr, []).append(name)
    return by_name, by_addr


def relocations(lib):
    """Offset -> the symbol (or, for a RELATIVE relocation, the address) it puts there."""
    out = {}
    for line in run("readelf", "-rW", lib).splitlines():
        m = re.match(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+(R_\w+)\s+(.*)$", line)
        if not m:
            continue
        off, kind, rest = int(m.group(1), 16), m.group(2), m.group(3).split()
        if kind.endswith("_RELATIVE"):
            out[off] = int(rest[-1], 16)
        elif len(rest) >= 2:
            out[off] = rest[1].split("@")[0]
    return out


def vtable_symbol(cls):
    parts = cls.split("::")
    if len(parts) == 1:
        return f"_ZTV{len(cls)}{cls}"
    return "_ZTVN" + "".join(f"{len(p)}{p}" for p in parts) + "E"


def slots(lib, cls):
    """The demangled functions of the first slots of cls's vtable: as many as nixlBackendEngine
    has (its own vtable's size in the same library)."""
    by_name, by_addr = symbols(lib)
    relocs = relocations(lib)
    base = by_name.get(vtable_symbol(BASE))
    table = by_name.get(vtable_symbol(cls))
    if not base or not table:
        sys.exit(f"check_vtable: {lib} has no vtable for {BASE} or {cls} (stripped, or another class name)")
    count = base[1] // 8 - 2  # offset-to-top and typeinfo come first
    per_slot = []
    for i in range(count):
        r = relocs.get(table[0] + 16 + 8 * i)
        if isinstance(r, int):
            r = by_addr.get(r, [f"<address {r:#x}>"])
        per_slot.append(r if isinstance(r, list) else [r or "<empty>"])
    flat = demangle([n for names in per_slot for n in names])
    out = []
    for names in per_slot:
        plain = []
        for n in flat[:len(names)]:
            for prefix in (f"{cls}::", f"{BASE}::"):
                if n.startswith(prefix):
                    n = n[len(prefix):]
            # A destructor carries its class's name.
            n = re.sub(r"^~\w+\(", "~(", n)
            n = n.replace("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >",
                          "std::string")
            plain.append(n)
        del flat[:len(names)]
        out.append(sorted(set(plain)))
    return out


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    theirs, ours = slots(argv[1], argv[2]), slots(argv[3], argv[4])
    print(f"{argv[1]}: {len(theirs)} slots; {argv[3]}: {len(ours)} slots")
    bad = 0
    for i in range(max(len(theirs), len(ours))):
        a = theirs[i] if i < len(theirs) else ["<none>"]
        b = ours[i] if i < len(ours) else ["<none>"]
        same = bool(set(a) & set(b))  # one function under several names matches any of them
        bad += not same
        print(f"{'  ' if same else '!!'} {i:2d} {' = '.join(a)}" + ("" if same else f"\n      ours: {' = '.join(b)}"))
    if bad:
        print(f"check_vtable: {bad} slots differ: nixl/abi/ no longer matches this NIXL")
        return 1
    print("check_vtable: the slots match")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
