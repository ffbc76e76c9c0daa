#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# An interpreter that loads an OpenMP runtime at run time, as python3 loads torch's: GNU libgomp
# through ctypes (dlopen). Prints "ready" and waits to be killed (argument "wait"), else exits.
import ctypes
import sys
import time

ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
if len(sys.argv) > 1 and sys.argv[1] == "wait":
    print("ready", flush=True)
    time.sleep(600)
