"""Train the classifier for a few steps on the GPU (CUDA only, as written)."""

import argparse
import os
import tempfile

import torch as T
from model import Net
from torch.cuda.amp import GradScaler, autocast
from utils import memory_report, seed_everything

from data import make_loader


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()

    seed_everything(0)
    T.cuda.set_device(0)
    device = T.device(args.device)
    model = Net().cuda()
    optimizer = T.optim.SGD(model.parameters(), lr=0.1)
    scaler = GradScaler()

    for step, (inputs, targets) in enumerate(make_loader()):
        inputs, targets = inputs.cuda(non_blocking=True), targets.to(device)
        optimizer.zero_grad()
        with autocast(dtype=T.bfloat16):
            loss = T.nn.functional.cross_entropy(model(inputs).float(), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        T.cuda.synchronize()
        print(f"step {step} loss {loss.item():.4f}")
        if step + 1 >= args.steps:
            break

    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    T.save(model.state_dict(), path)
    model.load_state_dict(T.load(path, map_location="cuda:0", weights_only=True))
    print(memory_report())


if __name__ == "__main__":
    main()
