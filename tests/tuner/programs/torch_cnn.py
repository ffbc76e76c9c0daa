# SPDX-License-Identifier: MIT
# A user's PyTorch program for the tests (Debian's python3-torch, which loads GNU libgomp): a small
# CNN trained on random data at batch 32. After two warm-up steps it prints each step's time, then
# the mean, as the NERSC seed's benchmark does:
#   step 3 time 41.250 ms
#   threads 2 steps 10 avg time 40.812 millisecond
#   /usr/bin/python3 torch_cnn.py [STEPS | SECONDSs]
# STEPS (default 10) fixes the work, so the process's wall time is a figure of merit; "2s" trains
# for about two seconds instead.
import sys
import time

import torch
import torch.nn as nn

arg = sys.argv[1] if len(sys.argv) > 1 else "10"
seconds = float(arg[:-1]) if arg.endswith("s") else None
steps = None if seconds is not None else int(arg)
torch.manual_seed(0)
net = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(32, 3, 32, 32)
y = torch.randint(0, 10, (32,))
times = []
start = None
step = 0
while True:
    if step == 2:
        start = time.monotonic()
    if step >= 2 and (len(times) >= steps if steps is not None else time.monotonic() - start >= seconds):
        break
    t0 = time.monotonic()
    opt.zero_grad()
    loss = loss_fn(net(x), y)
    loss.backward()
    opt.step()
    dt = (time.monotonic() - t0) * 1e3
    if step >= 2:
        times.append(dt)
        print("step %d time %.3f ms" % (step, dt))
    step += 1
print("threads %d steps %d avg time %.3f millisecond" % (torch.get_num_threads(), len(times),
                                                         sum(times) / max(len(times), 1)))
