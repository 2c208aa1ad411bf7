"""A tiny model for the module and call-stack tables of `gpuprof stats` (test_collected.py): two
Linear layers and a ReLU in a Sequential under the attribute `net` of a Net, 20 forwards on the
CPU from `step`. The line marked FORWARD is where the model's ops are called from."""

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))

    def forward(self, x):
        return self.net(x)  # FORWARD


def step(model, x):
    return model(x)


def main():
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(64, 256)
    with torch.no_grad():
        for _ in range(20):
            step(model, x)


if __name__ == "__main__":
    main()
