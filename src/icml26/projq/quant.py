"""The shared building blocks: a group-wise quantizer (integer grid or NF4), round-to-nearest,
GPTQ with an arbitrary Hessian, and activation statistics collected by forward hooks.

Every method of the ProjQ paper (Yu et al., "ProjQ: Project-and-Quantize for Adapter-Aware LLM
Compression", ICML 2026, arXiv:2606.00494) — RTN, GPTQ, GPTQ+EoRA, LoftQ, QLoRA-NF4 and ProjQ
itself — quantizes with the same :class:`GroupQuantizer`, so the comparison is apples to apples.
"""

from __future__ import annotations

import warnings

import torch

from icml26.core.validation import check_choice, check_int, check_scalar_in

__all__ = ["GroupQuantizer", "rtn_quantize", "gptq_quantize", "gptq_objective", "ActivationStats",
           "NF4_LEVELS", "check_weight", "check_gram"]

# The 16 NormalFloat-4 levels of QLoRA (Dettmers et al., 2023), normalised to [-1, 1].
NF4_LEVELS = torch.tensor([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230432987213, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0])

# Damping added on every Cholesky failure of GPTQ (the GPTQModel reference value).
DAMP_INCREMENT = 0.0015


def check_weight(W, name: str = "W") -> torch.Tensor:
    """A finite 2-D float tensor (m out × n in), upcast to float32."""
    if not isinstance(W, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(W).__name__}")
    if W.ndim != 2 or min(W.shape) < 1:
        raise ValueError(f"{name} must be a non-empty 2-D (out, in) matrix, got shape {tuple(W.shape)}")
    if not W.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {W.dtype}")
    if not bool(torch.isfinite(W).all()):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return W.detach().to(torch.float32)


def check_gram(G, n: int, name: str = "H", eigenvalues: torch.Tensor | None = None) -> torch.Tensor:
    """A finite, symmetric, positive semi-definite n×n matrix, as float64.

    ``eigenvalues`` (ascending, of the same matrix) spares the eigendecomposition when the caller
    already has one (:class:`ActivationStats` shares its own with :meth:`~ActivationStats.sqrt_gram`).
    """
    if not isinstance(G, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(G).__name__}")
    if G.shape != (n, n):
        raise ValueError(f"{name} must have shape ({n}, {n}) to match the weight's input width "
                         f"(W has {n} columns), got {tuple(G.shape)}")
    if not G.is_floating_point():
        raise TypeError(f"{name} must be a real floating tensor, got {G.dtype}")
    G = G.detach().to(torch.float64)
    if not bool(torch.isfinite(G).all()):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    scale = float(G.abs().max()) or 1.0
    if float((G - G.T).abs().max()) > 1e-6 * scale:
        raise ValueError(f"{name} must be symmetric (a Gram matrix X^T X)")
    lowest = float((torch.linalg.eigvalsh(G) if eigenvalues is None else eigenvalues)[0])
    if lowest < -1e-6 * scale:
        raise ValueError(f"{name} must be positive semi-definite, its smallest eigenvalue is {lowest:.3g}")
    return G


class GroupQuantizer:
    """Uniform min-max (or NF4) quantizer with one scale/zero per output row and input group.

    Parameters
    ----------
    bits : int
        Bits per weight, 1 to 8 (NF4 requires 4).
    group_size : int
        Columns (input features) per group; ``-1`` means the whole row.
    sym : bool
        Symmetric grid (zero point in the middle) instead of the asymmetric min-max grid.
    nf4 : bool
        Use the 16 NormalFloat levels with an absmax scale per group (QLoRA) instead of the
        uniform grid.
    short_last_group : bool
        Allow a width that ``group_size`` does not divide: the last group is shorter (as GPTQ
        does when it reaches the last columns). When False (default) such a width is an error,
        so a mistyped group size is never silently accepted.

    Notes
    -----
    Asymmetric grid for a group vector w (GPTQ's default): ``x_min = min(0, min w)``,
    ``x_max = max(0, max w)`` (both 0 → −1, +1); ``s = (x_max − x_min)/(2^b − 1)``,
    ``z = round(−x_min/s)``; ``q = clamp(round(w/s) + z, 0, 2^b − 1)``; ``ŵ = s (q − z)``.

    References
    ----------
    Frantar, Ashkboos, Hoefler, Alistarh, "GPTQ: Accurate Post-Training Quantization for
    Generative Pre-trained Transformers", ICLR 2023 (the asymmetric min-max group grid).
    Dettmers, Pagnoni, Holtzman, Zettlemoyer, "QLoRA: Efficient Finetuning of Quantized LLMs",
    NeurIPS 2023 (the NF4 levels). Yu, Zhang, Wang, Lasaulce, Debbah, "ProjQ:
    Project-and-Quantize for Adapter-Aware LLM Compression", ICML 2026, arXiv:2606.00494 (the
    quantizer of its Phase 1).

    Examples
    --------
    >>> quantizer = GroupQuantizer(bits=2, group_size=4)
    >>> W_hat, scale, zero = quantizer.quantize(torch.arange(8.0).reshape(1, 8))
    >>> W_hat
    tensor([[0.0000, 1.0000, 2.0000, 3.0000, 4.6667, 4.6667, 7.0000, 7.0000]])
    """

    def __init__(self, bits: int = 4, group_size: int = 128, sym: bool = False, nf4: bool = False,
                 short_last_group: bool = False):
        check_int(bits, "bits", min_value=1, max_value=8)
        check_int(group_size, "group_size")
        if group_size != -1 and group_size < 1:
            raise ValueError(f"group_size must be >= 1 or -1 (whole row), got {group_size}")
        if nf4 and bits != 4:
            raise ValueError(f"nf4=True needs bits=4, got bits={bits}")
        self.bits = bits
        self.group_size = group_size
        self.sym = bool(sym)
        self.nf4 = bool(nf4)
        self.short_last_group = bool(short_last_group)

    def __repr__(self) -> str:
        return (f"GroupQuantizer(bits={self.bits}, group_size={self.group_size}, sym={self.sym}, "
                f"nf4={self.nf4}, short_last_group={self.short_last_group})")

    @property
    def max_level(self) -> int:
        return 2 ** self.bits - 1

    def group_width(self, n: int) -> int:
        """Columns per group for an input width ``n`` (checks that the groups tile ``n``)."""
        g = n if self.group_size == -1 else self.group_size
        if n % g and not self.short_last_group:
            raise ValueError(f"group_size={self.group_size} does not divide the input width {n}; "
                             "pass a divisor, -1 (whole row) or short_last_group=True")
        return g

    def params(self, block: torch.Tensor):
        """Scale and zero of each row of ``block`` (m × g): tensors of shape (m, 1)."""
        if self.nf4:
            scale = block.abs().amax(dim=1, keepdim=True)
            return torch.where(scale > 0, scale, torch.ones_like(scale)), torch.zeros_like(scale)
        x_min = block.amin(dim=1, keepdim=True).clamp(max=0)
        x_max = block.amax(dim=1, keepdim=True).clamp(min=0)
        if self.sym:
            x_max = torch.maximum(x_min.abs(), x_max)
            x_min = -x_max
        both_zero = (x_min == 0) & (x_max == 0)
        x_min = torch.where(both_zero, -torch.ones_like(x_min), x_min)
        x_max = torch.where(both_zero, torch.ones_like(x_max), x_max)
        scale = (x_max - x_min) / self.max_level
        zero = torch.full_like(scale, (self.max_level + 1) / 2) if self.sym else torch.round(-x_min / scale)
        return scale, zero

    def apply(self, w: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
        """Dequantised values of ``w`` (m × k) on the grid given by per-row ``scale``/``zero``."""
        if self.nf4:
            levels = NF4_LEVELS.to(w)
            index = (w / scale).unsqueeze(-1).sub(levels).abs().argmin(dim=-1)
            return levels[index] * scale
        q = torch.clamp(torch.round(w / scale) + zero, 0, self.max_level)
        return scale * (q - zero)

    def quantize(self, W: torch.Tensor):
        """Round every group of ``W`` to its own grid (round-to-nearest).

        Parameters
        ----------
        W : Tensor of shape (m, n)

        Returns
        -------
        W_hat : Tensor (m, n), float32
        scale, zero : Tensors (m, n_groups)
        """
        W = check_weight(W)
        g = self.group_width(W.shape[1])
        out, scales, zeros = torch.empty_like(W), [], []
        for start in range(0, W.shape[1], g):
            block = W[:, start:start + g]
            scale, zero = self.params(block)
            out[:, start:start + g] = self.apply(block, scale, zero)
            scales.append(scale)
            zeros.append(zero)
        return out, torch.cat(scales, dim=1), torch.cat(zeros, dim=1)


def rtn_quantize(W: torch.Tensor, quantizer: GroupQuantizer) -> torch.Tensor:
    """Round-to-nearest quantization of ``W`` (the RTN baseline of the ProjQ paper).

    Parameters
    ----------
    W : Tensor of shape (m, n)
    quantizer : GroupQuantizer

    Returns
    -------
    Tensor of shape (m, n): the dequantised weight.
    """
    if not isinstance(quantizer, GroupQuantizer):
        raise TypeError(f"quantizer must be a GroupQuantizer, got {type(quantizer).__name__}")
    return quantizer.quantize(W)[0]


def gptq_objective(W: torch.Tensor, W_hat: torch.Tensor, H: torch.Tensor) -> float:
    """``tr((W − Ŵ) H (W − Ŵ)ᵀ)``, the quantity GPTQ minimises (float64)."""
    E = (W - W_hat).to(torch.float64)
    return float(torch.einsum("ij,jk,ik->", E, H.to(torch.float64), E))


def _inverse_cholesky_upper(H: torch.Tensor, damp: float, layer: str) -> torch.Tensor:
    """Upper Cholesky factor of (H + λ mean(diag H) I)⁻¹, raising λ by 0.0015 on failure."""
    mean_diag = float(torch.diag(H).mean())
    level = damp
    eye = torch.eye(H.shape[0], dtype=H.dtype, device=H.device)
    while level < 1:
        L, info = torch.linalg.cholesky_ex(H + level * mean_diag * eye)
        if int(info) == 0:
            inverse = torch.cholesky_inverse(L)
            U, info = torch.linalg.cholesky_ex(inverse, upper=True)
            if int(info) == 0:
                return U
        level += DAMP_INCREMENT
    raise ValueError(f"{layer}: the Hessian is not positive definite even with damping < 1")


def gptq_quantize(W: torch.Tensor, H: torch.Tensor, quantizer: GroupQuantizer, damp: float = 0.1,
                  block_size: int = 128, layer: str = "layer") -> torch.Tensor:
    """GPTQ (Frantar et al., 2023) with an arbitrary PSD Hessian ``H``.

    Greedily minimises ``tr((W − Ŵ) H (W − Ŵ)ᵀ)`` column by column with optimal-brain-surgeon
    updates of the not-yet-quantized columns (lazy block updates, no act-order, group parameters
    computed from the error-updated columns when GPTQ reaches a group's first column).
    ProjQ calls it with the projected Hessian ``H_⊥``.

    Parameters
    ----------
    W : Tensor of shape (m, n)
    H : Tensor of shape (n, n)
        Positive semi-definite (e.g. ``2/N · XᵀX``).
    quantizer : GroupQuantizer
    damp : float
        Relative damping λ in ``H + λ·mean(diag H)·I`` (raised by 0.0015 until Cholesky succeeds).
    block_size : int
        Columns per lazy-update block.
    layer : str
        Name used in error messages.

    Returns
    -------
    Tensor of shape (m, n): the dequantised weight Ŵ.

    Notes
    -----
    Dead inputs (``H_jj = 0``) get ``H_jj = 1`` and a zero weight column, as in the reference.
    The Cholesky factorisation runs in float64, the column updates in float32.
    """
    if not isinstance(quantizer, GroupQuantizer):
        raise TypeError(f"quantizer must be a GroupQuantizer, got {type(quantizer).__name__}")
    W = check_weight(W)
    H = check_gram(H, W.shape[1])
    check_scalar_in(damp, "damp", low=0.0, high=1.0, high_inclusive=False)
    check_int(block_size, "block_size", min_value=1)
    return _gptq(W, H, quantizer, damp, block_size, layer)


def _gptq(W: torch.Tensor, H: torch.Tensor, quantizer: GroupQuantizer, damp: float, block_size: int,
          layer: str) -> torch.Tensor:
    """GPTQ on already validated inputs (W float32, H float64)."""
    W, H = W.clone(), H.clone()
    n = W.shape[1]
    g = quantizer.group_width(n)
    dead = torch.diag(H) == 0
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    Hinv = _inverse_cholesky_upper(H, damp, layer).to(torch.float32)
    Q = torch.zeros_like(W)
    scale = zero = None
    for i1 in range(0, n, block_size):
        i2 = min(i1 + block_size, n)
        W1 = W[:, i1:i2].clone()
        Err1 = torch.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            column = i1 + i
            if column % g == 0:
                group = torch.cat([W1[:, i:], W[:, i2:]], dim=1)[:, :g]
                scale, zero = quantizer.params(group)
            w = W1[:, i:i + 1]
            q = quantizer.apply(w, scale, zero)
            Q[:, column:column + 1] = q
            err = (w - q) / Hinv1[i, i]
            W1[:, i:] -= err @ Hinv1[i:i + 1, i:]
            Err1[:, i:i + 1] = err
        W[:, i2:] -= Err1 @ Hinv[i1:i2, i2:]
    return Q


class ActivationStats:
    """Running Gram matrix ``G = Σ xxᵀ`` of a linear layer's inputs (float64) and token count.

    The Gram matrix accumulates on the device of the first batch (later batches are moved
    there), so statistics of a model on a GPU stay on the GPU.

    Parameters
    ----------
    n_features : int
        Input width of the layer.
    name : str
        Layer name used in error messages.

    Attributes
    ----------
    G : Tensor (n, n), float64
        Sum of ``xxᵀ`` over all tokens seen.
    N : int
        Tokens seen.
    G_last, N_last : Tensor, int
        The same for the last batch only (the reference caches only the last calibration batch
        for the projection; see ``ProjQ(projection_tokens="last_batch")``).

    References
    ----------
    Yu, Zhang, Wang, Lasaulce, Debbah, "ProjQ: Project-and-Quantize for Adapter-Aware LLM
    Compression", ICML 2026, arXiv:2606.00494 (the activation Gram matrix its projection and
    adapter initialisation use). Frantar et al., "GPTQ: Accurate Post-Training Quantization for
    Generative Pre-trained Transformers", ICLR 2023 (the same statistic, ``2G/N``, is GPTQ's
    layer Hessian).

    Examples
    --------
    >>> stats = ActivationStats(3)
    >>> stats.update(torch.ones(4, 3))
    >>> stats.N, float(stats.G[0, 0])
    (4, 4.0)
    """

    def __init__(self, n_features: int, name: str = "layer"):
        self.n_features = check_int(n_features, "n_features", min_value=1)
        self.name = name
        self.G = torch.zeros(n_features, n_features, dtype=torch.float64)
        self.N = 0
        self.G_last = self.G.clone()
        self.N_last = 0
        self._cache = {}  # square roots and validity checks, cleared by update()

    @torch.no_grad()
    def update(self, X: torch.Tensor) -> None:
        """Add a batch of inputs ``X`` of shape (..., n) (upcast to float64)."""
        if not isinstance(X, torch.Tensor):
            raise TypeError(f"{self.name}: X must be a torch.Tensor, got {type(X).__name__}")
        if X.shape[-1] != self.n_features:
            raise ValueError(f"{self.name}: X has {X.shape[-1]} features, expected {self.n_features}")
        if not X.is_floating_point():
            raise TypeError(f"{self.name}: X must be a real floating tensor, got {X.dtype}")
        if self.N == 0 and self.G.device != X.device:       # accumulate where the data lives
            self.G = self.G.to(X.device)
        X = X.detach().reshape(-1, self.n_features).to(device=self.G.device, dtype=torch.float64)
        if not bool(torch.isfinite(X).all()):
            raise ValueError(f"{self.name}: the inputs contain NaN or infinity (in X)")
        self.G_last = X.T @ X
        self.N_last = X.shape[0]
        self.G += self.G_last
        self.N += self.N_last
        self._cache = {}

    def hessian(self, tokens: str = "all") -> torch.Tensor:
        """GPTQ's Hessian ``(2/N)·XᵀX`` over all tokens or the last batch."""
        G, N = self.gram(tokens)
        return 2.0 * G / N

    def gram(self, tokens: str = "all"):
        """``(G, N)`` over ``tokens`` = "all" or "last_batch"."""
        check_choice(tokens, "tokens", ("all", "last_batch"))
        G, N = (self.G, self.N) if tokens == "all" else (self.G_last, self.N_last)
        if N == 0:
            raise ValueError(f"{self.name}: no activations collected yet")
        if N < self.n_features:
            warnings.warn(f"{self.name}: {N} tokens for {self.n_features} input features; the Gram "
                          "matrix is rank-deficient (damping keeps GPTQ well posed)", stacklevel=3)
        return G, N

    def eigh(self, tokens: str = "all"):
        """``(eigenvalues, eigenvectors)`` of ``G`` (ascending, float64), computed once per update.

        The one eigendecomposition behind :meth:`check` (the PSD test), :meth:`sqrt_gram` and the
        activation whitening of :func:`~icml26.projq.projq.lordq_init`.
        """
        key = ("eigh", tokens)
        if key not in self._cache:
            G, _ = self.gram(tokens)
            if not bool(torch.isfinite(G).all()):
                check_gram(G, self.n_features, f"{self.name}: Gram matrix")    # raises, naming the layer
            self._cache[key] = torch.linalg.eigh(G)
        return self._cache[key]

    def sqrt_gram(self, tokens: str = "all") -> torch.Tensor:
        """Symmetric PSD square root ``S = G^{1/2}`` (float64, negative eigenvalues clipped to 0)."""
        key = ("sqrt", tokens)
        if key not in self._cache:
            eigenvalues, eigenvectors = self.eigh(tokens)
            self._cache[key] = (eigenvectors * eigenvalues.clamp(min=0).sqrt()) @ eigenvectors.T
        return self._cache[key]

    def check(self, tokens: str = "all") -> None:
        """Raise ValueError (naming the layer) unless the Gram matrix is finite, symmetric and PSD."""
        key = ("checked", tokens)
        if key not in self._cache:
            check_gram(self.gram(tokens)[0], self.n_features, f"{self.name}: Gram matrix",
                       eigenvalues=self.eigh(tokens)[0])
            self._cache[key] = True

    @classmethod
    def from_module_hook(cls, module: torch.nn.Module, name: str = "layer"):
        """Attach a forward pre-hook that feeds the module's inputs to new stats.

        Returns
        -------
        (stats, handle) : the :class:`ActivationStats` and the hook handle (call
        ``handle.remove()`` when done).
        """
        if not isinstance(module, torch.nn.Linear):
            raise TypeError(f"{name}: from_module_hook expects a torch.nn.Linear, got {type(module).__name__}")
        stats = cls(module.in_features, name)
        handle = module.register_forward_pre_hook(lambda _module, args: stats.update(args[0]))
        return stats, handle

    @classmethod
    def from_tensor(cls, X: torch.Tensor, name: str = "layer"):
        """Stats of one batch of inputs ``X`` (N × n)."""
        if not isinstance(X, torch.Tensor) or X.ndim < 2:
            raise ValueError(f"{name}: X must be a tensor of shape (tokens, features)")
        if X.numel() == 0:
            raise ValueError(f"{name}: X is empty, shape {tuple(X.shape)}; expected at least one token")
        stats = cls(X.shape[-1], name)
        stats.update(X)
        return stats

    @classmethod
    def from_gram(cls, G: torch.Tensor, N: int, name: str = "layer"):
        """Stats from a given Gram matrix (checked finite, symmetric, PSD) and token count."""
        check_int(N, "N", min_value=1)
        if not isinstance(G, torch.Tensor) or G.ndim != 2:
            raise ValueError(f"{name}: G must be a square 2-D tensor")
        stats = cls(G.shape[0], name)
        stats.G = check_gram(G, G.shape[0], f"{name}: G")
        stats.N = N
        stats.G_last, stats.N_last = stats.G, N
        stats._cache = {}
        return stats
