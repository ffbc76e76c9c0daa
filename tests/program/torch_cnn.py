# SPDX-License-Identifier: MIT
# A small CNN training loop on Debian's PyTorch (python3-torch), for the binding-proof test: it runs
# training steps on random data for about SECONDS seconds and prints the mean step time.
#   /usr/bin/python3 torch_cnn.py [SECONDS]
import sys
import time

import torch
import torch.nn as nn

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
torch.manual_seed(0)
net = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(32, 3, 32, 32)
y = torch.randint(0, 10, (32,))
steps = 0
t0 = time.monotonic()
while time.monotonic() - t0 < seconds:
    opt.zero_grad()
    loss = loss_fn(net(x), y)
    loss.backward()
    opt.step()
    steps += 1
elapsed = time.monotonic() - t0
print("threads %d steps %d avg time %.3f millisecond" % (torch.get_num_threads(), steps, elapsed / steps * 1e3))
