"""amp.compile(..., data_parallel=True) under ``mpirun -np 2`` (ctest runs
this file that way: every rank runs every test, and the collectives pair up).

Each rank passes its own shard of every global batch. Bitwise: two ranks
equal one process that accumulates the same two shards per update (the
emulation: the same per-shard step and the same sum; one thread per
process, as OpenBLAS splits a GEMM's sums by the thread count). Within
tolerance: SyncBatchNorm against one process on the concatenated batch.
"""

import copy

import pytest
import torch
import torch.nn as nn

import amp
from models import Net, batches, mlp


@pytest.fixture(autouse=True)
def one_thread():
    amp.set_num_threads(1)


def _same(a: nn.Module, b: nn.Module):
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name


def test_two_ranks():
    assert amp.get_world_size() == 2, "run under mpirun -np 2"
    assert amp.get_rank() in (0, 1)


@pytest.mark.parametrize("opt_level", ["O0", "O1"])
def test_two_ranks_equal_accumulation_bitwise(opt_level):
    rank = amp.get_rank()
    torch.manual_seed(rank)  # every rank starts from rank 0's parameters
    model = mlp()
    torch.manual_seed(0)
    single = mlp()
    data = [(x.view(16, -1), y) for x, y in batches(8)]
    make = lambda m: torch.optim.Adam(m.parameters(), lr=1e-3)
    kwargs = dict(example_inputs=data[0], opt_level=opt_level, dtype=torch.float16)
    dp = amp.compile(model, nn.CrossEntropyLoss(), optimizer=make(model),
                     data_parallel=True, **kwargs)
    _same(model, single)  # trained in place: every rank's model has rank 0's values
    one = amp.compile(single, nn.CrossEntropyLoss(), optimizer=make(single),
                      accumulate=2, **kwargs)
    for update in range(4):
        got = dp(*data[2 * update + rank])
        for shard in (0, 1):
            want = one(*data[2 * update + shard])
        assert got.scale == want.scale
    _same(model, single)  # without copy_to
    dp.copy_to(model)
    one.copy_to(single)
    _same(model, single)


def test_sync_batchnorm_matches_the_concatenated_batch():
    # Net: conv + batch norm. Ranks of batch 16 against one process of 32
    # over the same examples, O0: within 1e-4 (each rank's own statistics
    # would not be: checked too).
    rank = amp.get_rank()
    torch.manual_seed(0)
    base = Net()
    data = batches(6)
    whole = [(torch.cat([data[i][0], data[i + 1][0]]), torch.cat([data[i][1], data[i + 1][1]]))
             for i in (0, 2, 4)]
    results = {}
    for name, sync in (("sync", True), ("local", False)):
        model = copy.deepcopy(base)
        step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=data[0],
                           optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                           opt_level="O0", data_parallel=True, sync_batchnorm=sync)
        for i in (0, 2, 4):
            step(*data[i + rank])
        step.copy_to(model)
        results[name] = model
    single = copy.deepcopy(base)
    step = amp.compile(single, nn.CrossEntropyLoss(), example_inputs=whole[0],
                       optimizer=torch.optim.SGD(single.parameters(), lr=0.1), opt_level="O0")
    for x, y in whole:
        step(x, y)
    step.copy_to(single)

    def worst(model):
        out = 0.0
        for (name, x), y in zip(model.state_dict().items(), single.state_dict().values()):
            if x.is_floating_point():
                out = max(out, ((x - y).abs().max() / y.abs().max()).item())
        return out

    assert worst(results["sync"]) <= 1e-4
    assert worst(results["local"]) > 1e-3


def test_errors():
    model = mlp()
    x, y = torch.randn(16, 784), torch.randint(0, 10, (16,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="sync_batchnorm=True needs data_parallel=True"):
        amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y), optimizer=opt,
                    sync_batchnorm=True)


def test_cuda_starts_nccl_over_the_job(monkeypatch, capfd):
    """backend='cuda' on the runtime tests' stand-in driver and NCCL (this
    machine may have no GPU): each rank takes the device of its local rank,
    NCCL starts over MPI with the job's size and this rank, and a step fails
    at cuBLASLt (which needs a real driver) with the runtime's error."""
    import os
    monkeypatch.setenv("AMP_CUDA_DRIVER", os.environ["AMP_TEST_FAKE_CUDA_DRIVER"])
    monkeypatch.setenv("AMP_NCCL_LIBRARY", os.environ["AMP_TEST_FAKE_NCCL"])
    monkeypatch.setenv("AMP_FAKE_CUDA_DEVICES", "2")
    monkeypatch.setenv("AMP_FAKE_CUDA_TRACE", "1")
    monkeypatch.setenv("AMP_FAKE_NCCL_TRACE", "1")
    rank = amp.get_rank()
    model = mlp()
    x, y = torch.randn(16, 784), torch.randint(0, 10, (16,))
    step = amp.compile(model, nn.CrossEntropyLoss(), example_inputs=(x, y),
                       optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                       backend="cuda", data_parallel=True)
    with pytest.raises(RuntimeError, match="cublasLtCreate failed"):
        step(x, y)
    err = capfd.readouterr().err
    assert f"fake-cuda: device {rank}\n" in err
    assert f"fake-nccl: init rank {rank} of 2 id fake-id-" in err
