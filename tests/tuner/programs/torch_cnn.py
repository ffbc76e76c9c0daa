# SPDX-License-Identifier: MIT
# A user's PyTorch program for the program-trial tests (Debian's python3-torch, which loads GNU
# libgomp): a small CNN trained for a fixed number of steps on random data at batch 32; after two
# warm-up steps it prints each step's time, then the mean, as the NERSC seed's benchmark does:
#   step 3 time 41.250 ms
#   avg time 40.812 millisecond
#   /usr/bin/python3 torch_cnn.py [STEPS]
import sys
import time

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
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
for step in range(steps + 2):
    t0 = time.monotonic()
    opt.zero_grad()
    loss = loss_fn(net(x), y)
    loss.backward()
    opt.step()
    dt = (time.monotonic() - t0) * 1e3
    if step >= 2:
        times.append(dt)
        print("step %d time %.3f ms" % (step, dt))
print("threads %d loss %.4f" % (torch.get_num_threads(), loss.item()))
print("avg time %.3f millisecond" % (sum(times) / len(times)))
