"""with_flops=True: each op's FLOPs from its recorded input shapes, counted as torch 1.13's profiler
counts them (torch/csrc/profiler/util.cpp computeFlops, checked against torch.profiler's figures
in tests/python/test_torch_api.py):

- aten::mm, aten::addmm: 2*M*K*N from mat1 [M, K] and mat2 [K, N];
- aten::bmm, aten::baddbmm: 2*B*M*K*N from [B, M, K] and [B, K, N];
- aten::conv2d: 2 * N * OH * OW * weight.numel(), OH and OW those of the output;
- aten::mul, aten::add: the numel of the first input;
- everything else 0, aten::matmul and aten::linear included: torch counts the aten::mm or
  aten::addmm they call, not them, and so does gpuprof.

The DB holds input shapes, not argument values, so conv2d's stride, padding and dilation are not
there: its output shape is read from the ops inside it (the output tensor [N, C_out, OH, OW] some
op of the convolution's own takes, e.g. as_strided_ on the mkldnn path). Where none of them shows
it (the slow CPU path), the call's FLOPs are unknown: counted 0, and flops_of says so once.
"""

__all__ = ["flops_of", "COUNTED_OPS"]

COUNTED_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::conv2d", "aten::mul", "aten::add")

# The convolution's own layers: their first input is conv2d's input, not its output.
_CONV_LAYERS = ("aten::convolution", "aten::_convolution", "aten::mkldnn_convolution", "aten::thnn_conv2d",
                "aten::_slow_conv2d_forward", "aten::cudnn_convolution", "aten::_nnpack_spatial_convolution",
                "aten::miopen_convolution", "aten::slow_conv_dilated2d", "aten::_convolution_nogroup")


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _matmul(a, b):
    if len(a) == 2 and len(b) == 2 and a[1] == b[0]:
        return 2 * a[0] * a[1] * b[1]
    return 0


def _batched(a, b):
    if len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return 2 * a[0] * a[1] * a[2] * b[2]
    return 0


def _conv_output(shapes, descendants):
    """[N, C_out, OH, OW] of a conv2d call with input [N, C, H, W] and weight [C_out, ...], read from
    the input shapes of the ops inside it; None where none of them takes the output."""
    n, c_out = shapes[0][0], shapes[1][0]
    for name, inputs in descendants:
        if name in _CONV_LAYERS:
            continue
        for shape in inputs:
            if len(shape) == 4 and shape[0] == n and shape[1] == c_out:
                return shape
    return None


def flops_of(name, shapes, descendants=()):
    """FLOPs of one call of op `name` with input shapes `shapes` (a list of lists; [] for a non-tensor
    input), or None when it is an op torch counts but its figure cannot be had from the shapes.
    `descendants`: (name, input shapes) of the ops inside the call, for conv2d's output shape."""
    if name not in COUNTED_OPS or not shapes:
        return 0
    if name == "aten::mm" and len(shapes) >= 2:
        return _matmul(shapes[0], shapes[1])
    if name == "aten::addmm" and len(shapes) >= 3:
        return _matmul(shapes[1], shapes[2])
    if name == "aten::bmm" and len(shapes) >= 2:
        return _batched(shapes[0], shapes[1])
    if name == "aten::baddbmm" and len(shapes) >= 3:
        return _batched(shapes[1], shapes[2])
    if name in ("aten::mul", "aten::add"):
        return _numel(shapes[0]) if shapes[0] else 0
    if name == "aten::conv2d" and len(shapes) >= 2 and len(shapes[0]) == 4 and len(shapes[1]) == 4:
        out = _conv_output(shapes, descendants)
        if out is None:
            return None
        return 2 * out[0] * out[2] * out[3] * _numel(shapes[1])
    return 0
