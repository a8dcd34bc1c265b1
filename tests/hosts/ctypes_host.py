"""The host matrix's Python host (tests/hosts/run.sh): ctypes.CDLL of every
installed library of timewheel, then a core wheel's timer fired through
ctypes, from a process whose malloc is Python's (the C library's)."""
import ctypes
import sys

libdir = sys.argv[1]
names = ["libtimewheel.so.0", "libtimewheel-loop.so.0",
         "libtimewheel-service.so.0", "libtimewheel-purgatory.so.0",
         "libtimewheel-store.so.0"]
libs = [ctypes.CDLL(f"{libdir}/{n}") for n in names]
core = libs[0]
core.tw_version_string.restype = ctypes.c_char_p

# struct tw_config and struct tw_timer are filled by the library: buffers
# large enough for either (the timer is 48 bytes, the config 104).
cfg = ctypes.create_string_buffer(512)
timer = ctypes.create_string_buffer(256)
CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
fired = []
cb = CB(lambda t, arg: fired.append(1))
core.tw_create.restype = ctypes.c_void_p
core.tw_create.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
core.tw_timer_init.argtypes = [ctypes.c_void_p, CB, ctypes.c_void_p]
core.tw_schedule_after.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_uint64]
core.tw_advance.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
core.tw_advance.restype = ctypes.c_int64
core.tw_destroy.argtypes = [ctypes.c_void_p]
core.tw_config_init(cfg, 0)  # TW_HIER
w = core.tw_create(cfg, None)
assert w, "tw_create failed"
core.tw_timer_init(timer, cb, None)
assert core.tw_schedule_after(w, timer, 1000000) == 0
assert core.tw_advance(w, 1000000) == 1 and fired == [1], "no timer fired"
core.tw_destroy(w)
print(f"  python ctypes: {len(libs)} libraries loaded, timewheel "
      f"{core.tw_version_string().decode()}, a core timer fired")
