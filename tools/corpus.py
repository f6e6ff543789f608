"""The corpus of real models: PyTorch modules that tools/thunder_export.py captures with Thunder
into examples/corpus/*.json, and that tools/check_against_torch.py checks against PyTorch eager.

Small shapes (32 tokens, 64 channels) keep the host-emulated checks quick. Each model is an
nn.Module in training mode with its example inputs; integer inputs (class targets) are drawn
here in their valid range and written next to the trace, since the harness's own draws are not.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, EMBED, HEADS, VOCAB = 2, 16, 64, 4, 96


class Model:
    """autocast: the module runs under torch.autocast("cpu", dtype=torch.bfloat16) (BF16Autocast),
    captured as Thunder records it and checked against eager autocast with bf16 tolerances."""

    def __init__(self, name, build, inputs, dropout=False, autocast=False):
        self.name, self._build, self._inputs, self.dropout, self.autocast = name, build, inputs, dropout, autocast

    def fn(self):
        torch.manual_seed(0)
        m = self._build()
        if self.autocast:
            m = BF16Autocast(m)
        m.train()
        return m

    def inputs(self):
        g = torch.Generator().manual_seed(1)
        return self._inputs(g)


def tokens(g, requires_grad=True):
    return torch.randn(BATCH, SEQ, EMBED, generator=g).requires_grad_(requires_grad)


# ---- nanoGPT (github.com/karpathy/nanoGPT, model.py): one transformer block ------------------
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class GptMLP(nn.Module):
    def __init__(self, n_embd, dropout):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class NanoGptBlock(nn.Module):
    def __init__(self, n_embd=EMBED, n_head=HEADS, dropout=0.1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = GptMLP(n_embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


# ---- Llama-style block (lit-gpt / Llama 2): RMSNorm, rotary embedding, SwiGLU ----------------
class RMSNorm(nn.Module):
    def __init__(self, size, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        norm_x = torch.mean(x * x, dim=-1, keepdim=True)
        return (x * torch.rsqrt(norm_x + self.eps)).to(dtype) * self.weight


def apply_rope(x, cos, sin):
    head_size = x.size(-1)
    x1 = x[..., : head_size // 2]
    x2 = x[..., head_size // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos + rotated * sin


class LlamaBlock(nn.Module):
    def __init__(self, n_embd=EMBED, n_head=HEADS, hidden=172):
        super().__init__()
        self.norm_1 = RMSNorm(n_embd)
        self.attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)
        self.norm_2 = RMSNorm(n_embd)
        self.fc_1 = nn.Linear(n_embd, hidden, bias=False)
        self.fc_2 = nn.Linear(n_embd, hidden, bias=False)
        self.mlp_proj = nn.Linear(hidden, n_embd, bias=False)
        self.n_head = n_head

    def forward(self, x, cos, sin):
        B, T, C = x.size()
        hs = C // self.n_head
        q, k, v = self.attn(self.norm_1(x)).split(C, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        h = self.norm_2(x)
        return x + self.mlp_proj(F.silu(self.fc_1(h)) * self.fc_2(h))


def rope_cache(seq, head_size, base=10000):
    theta = 1.0 / (base ** (torch.arange(0, head_size, 2).float() / head_size))
    angles = torch.outer(torch.arange(seq).float(), theta).repeat(1, 2)
    return torch.cos(angles), torch.sin(angles)


# ---- an MLP with dropout and a cross-entropy head -----------------------------------------
class MlpDropout(nn.Module):
    def __init__(self, n_embd=EMBED, p=0.1):
        super().__init__()
        self.fc1 = nn.Linear(n_embd, 4 * n_embd)
        self.fc2 = nn.Linear(4 * n_embd, n_embd)
        self.p = p

    def forward(self, x):
        return F.dropout(self.fc2(F.gelu(self.fc1(x), approximate="tanh")), self.p, self.training)


class CrossEntropyHead(nn.Module):
    def __init__(self, n_embd=EMBED, vocab=VOCAB):
        super().__init__()
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, x, targets):
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# ---- custom autograd functions: inlined forward and backward ---------------------------------
class TanhGate(torch.autograd.Function):
    """y = tanh(a) * sigmoid(b); saves the two intermediates, not the inputs."""

    @staticmethod
    def forward(ctx, a, b):
        t = torch.tanh(a)
        s = torch.sigmoid(b)
        ctx.save_for_backward(t, s)
        return t * s

    @staticmethod
    def backward(ctx, grad):
        t, s = ctx.saved_tensors
        return grad * s * (1 - t * t), grad * t * s * (1 - s)


def quantize_fwd(ctx, x):
    """Rounds to a grid of 1/8; saves its input for the backward."""
    return torch.round(x * 8.0) / 8.0, [x]


def quantize_bwd(ctx, grad, x):
    """A clipped straight-through estimator: the rounding's true derivative is zero almost
    everywhere; this passes the gradient where |x| <= 1 and blocks it elsewhere."""
    return grad * (x.abs() <= 1.0).to(grad.dtype)


class CustomFunctionsMlp(nn.Module):
    def __init__(self, n_embd=EMBED):
        super().__init__()
        self.gate_in = nn.Linear(n_embd, 2 * n_embd)
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        a, b = self.gate_in(x).chunk(2, dim=-1)
        h = TanhGate.apply(a, b)
        q = torch.ops.higher_order.autograd_function_apply(quantize_fwd, quantize_bwd, h, args_tensor_mask=[True],
                                                            non_differentiable_idx=[])
        return self.out(q)


class BF16Autocast(nn.Module):
    """Runs `inner` under CPU bf16 autocast (Thunder's jit records the autocast casts and GEMMs)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.inner(*args)


# ---- third-party blocks (Hugging Face transformers, tools/requirements.txt's version) ----------
# Tiny configs, dropout 0 (the blocks' nn.Dropout still appear in the trace, as identities).
def first(out):
    """transformers' layers return a tensor or a tuple whose first item is the hidden states."""
    return out[0] if isinstance(out, tuple) else out


class Gpt2Block(nn.Module):
    """GPT-2's block: Conv1D projections (torch.addmm), GELU (tanh), causal sdpa attention."""

    def __init__(self):
        super().__init__()
        import transformers
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block
        c = transformers.GPT2Config(n_embd=EMBED, n_head=HEADS, n_layer=1, n_positions=SEQ, resid_pdrop=0.0, attn_pdrop=0.0,
                                    embd_pdrop=0.0)
        c._attn_implementation = "sdpa"
        self.block = GPT2Block(c, layer_idx=0)

    def forward(self, x):
        return first(self.block(x))


class BertLayer(nn.Module):
    """BERT's encoder layer: sdpa self-attention (no mask), post-LayerNorm residuals, GELU MLP."""

    def __init__(self):
        super().__init__()
        import transformers
        from transformers.models.bert.modeling_bert import BertLayer as Layer
        c = transformers.BertConfig(hidden_size=EMBED, num_attention_heads=HEADS, intermediate_size=4 * EMBED,
                                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        c._attn_implementation = "sdpa"
        self.layer = Layer(c)

    def forward(self, x):
        return first(self.layer(x))


class VitLayer(nn.Module):
    """ViT's patch embedding (Conv2d with kernel == stride, a CLS token, position embeddings) and
    one encoder layer, on 16x16 images in 4x4 patches."""

    def __init__(self):
        super().__init__()
        import transformers
        from transformers.models.vit.modeling_vit import ViTEmbeddings, ViTLayer
        c = transformers.ViTConfig(hidden_size=EMBED, num_attention_heads=HEADS, intermediate_size=4 * EMBED, image_size=16,
                                   patch_size=4, num_channels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        c._attn_implementation = "sdpa"
        self.embeddings = ViTEmbeddings(c)
        self.layer = ViTLayer(c)

    def forward(self, images):
        return first(self.layer(self.embeddings(images)))


class Qwen2Layer(nn.Module):
    """Qwen2's decoder layer: RMSNorm, rotary embedding, grouped-query attention (4 query heads on
    2 key/value heads, repeat_kv in the eager attention; Thunder's sdpa refuses enable_gqa), SwiGLU."""

    def __init__(self):
        super().__init__()
        import transformers
        from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer, Qwen2RotaryEmbedding
        c = transformers.Qwen2Config(hidden_size=EMBED, num_attention_heads=HEADS, num_key_value_heads=2, intermediate_size=96,
                                     max_position_embeddings=SEQ)
        c._attn_implementation = "eager"
        self.layer = Qwen2DecoderLayer(c, layer_idx=0)
        self.rope = Qwen2RotaryEmbedding(c)

    def forward(self, x):
        position_embeddings = self.rope(x, torch.arange(x.size(1)).unsqueeze(0))
        return first(self.layer(x, position_embeddings=position_embeddings, attention_mask=None))


# ---- Modules Thunder 0.2.6 cannot capture, which torch.export can (tools/check_pt2.py) ----------
class Qwen2SdpaLayer(Qwen2Layer):
    """Qwen2's decoder layer with transformers' sdpa attention: grouped-query attention reaches
    F.scaled_dot_product_attention with enable_gqa=True, which Thunder's sdpa refuses."""

    def __init__(self):
        super().__init__()
        self.layer.self_attn.config._attn_implementation = "sdpa"


class TorchEncoderLayer(nn.Module):
    """torch.nn.TransformerEncoderLayer (multi-head attention, ReLU MLP, dropout off), batch-first
    or not, post- or pre-norm: Thunder cannot register multi_head_attention_forward's call."""

    def __init__(self, batch_first, norm_first):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(EMBED, HEADS, dim_feedforward=2 * EMBED, dropout=0.0, batch_first=batch_first,
                                                norm_first=norm_first)
        self.batch_first = batch_first

    def forward(self, x):
        return self.layer(x if self.batch_first else x.transpose(0, 1))


class T5Layer(nn.Module):
    """transformers' T5Block (encoder, relative position bias, dropout off): Thunder runs
    `relative_buckets += ...` as an in-place prims.copy_."""

    def __init__(self):
        super().__init__()
        import transformers
        from transformers.models.t5.modeling_t5 import T5Block
        c = transformers.T5Config(d_model=EMBED, d_kv=EMBED // HEADS, num_heads=HEADS, d_ff=2 * EMBED, dropout_rate=0.0,
                                  is_decoder=False)
        self.block = T5Block(c, has_relative_attention_bias=True)

    def forward(self, x):
        return first(self.block(x))


class DecoderLayer(nn.Module):
    """torch.nn.TransformerDecoderLayer (batch-first, post-norm, dropout off): self-attention,
    cross-attention on a memory input, ReLU MLP. Thunder cannot register multi_head_attention_forward."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(EMBED, HEADS, dim_feedforward=2 * EMBED, dropout=0.0, batch_first=True)

    def forward(self, x, memory):
        return self.layer(x, memory)


class CrossAttention(nn.Module):
    """torch.nn.MultiheadAttention on keys and values of their own widths (kdim 32, vdim 48)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(EMBED, HEADS, batch_first=True, kdim=32, vdim=48)

    def forward(self, x, keys, values):
        return self.attn(x, keys, values, need_weights=False)[0]


# ---- timm (tools/requirements.txt's version): tiny configs, random init ----------------------------
class TimmVitBlock(nn.Module):
    """timm's ViT Block with qk-norm and LayerScale: fused sdpa attention on unbound q, k, v."""

    def __init__(self):
        super().__init__()
        from timm.models.vision_transformer import Block
        self.block = Block(dim=EMBED, num_heads=HEADS, mlp_ratio=2.0, qkv_bias=True, qk_norm=True, init_values=0.1)

    def forward(self, x):
        return self.block(x)


class TimmMixerBlock(nn.Module):
    """timm's MLP-Mixer block: token mixing across the sequence (transposes), channel mixing."""

    def __init__(self):
        super().__init__()
        from timm.models.mlp_mixer import MixerBlock
        self.block = MixerBlock(EMBED, SEQ, mlp_ratio=(0.5, 2.0))

    def forward(self, x):
        return self.block(x)


class TimmSwiGlu(nn.Module):
    """timm's SwiGLU MLP with its inner LayerNorm."""

    def __init__(self):
        super().__init__()
        from timm.layers import SwiGLU
        self.mlp = SwiGLU(in_features=EMBED, hidden_features=96, norm_layer=nn.LayerNorm)

    def forward(self, x):
        return self.mlp(x)


class TimmConvNextBlock(nn.Module):
    """timm's ConvNeXt block: a depthwise 7x7 convolution (padding 3, a group per channel),
    channels-last LayerNorm, an MLP and LayerScale."""

    def __init__(self):
        super().__init__()
        from timm.models.convnext import ConvNeXtBlock
        self.block = ConvNeXtBlock(16, ls_init_value=0.5)

    def forward(self, x):
        return self.block(x)


class TimmResNet(nn.Module):
    """A whole timm ResNet-D, narrowed for host emulation: the 7x7 stride-2 stem convolution,
    BatchNorm in training (its running statistics updated), ReLU, the 3x3 stride-2 max pool, four
    stages of one basic block each (strided, and dilated where output_stride=8 keeps the last
    two stages at 5x5), downsamples that average 2x2 windows first (avg_down: ceil_mode=True and
    count_include_pad=False, over the odd 9x9 of 36x36 images) then convolve 1x1, the global
    average pool and the classifier. The last BatchNorm of each block starts at 1, not timm's 0,
    so gradients reach every convolution."""

    def __init__(self):
        super().__init__()
        from timm.models.resnet import BasicBlock, ResNet
        self.net = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, channels=(16, 32, 64, 128), output_stride=8, avg_down=True,
                          zero_init_last=False)

    def forward(self, x):
        return self.net(x)


class UNetResBlock(nn.Module):
    """A diffusion UNet's residual block (diffusers' ResnetBlock2D without the time embedding),
    written with torch.nn: GroupNorm, SiLU and a 3x3 convolution, twice, and the skip."""

    def __init__(self, channels=32, groups=8):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(groups, channels), nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(groups, channels, eps=1e-6), nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        return x + self.conv2(F.silu(self.norm2(h)))


def images(g):
    return (torch.randn(BATCH, 3, 16, 16, generator=g).requires_grad_(True),)


MODELS = [
    Model("nanogpt_block", NanoGptBlock, lambda g: (tokens(g),), dropout=True),
    Model("llama_block", LlamaBlock,
          lambda g: (tokens(g), *rope_cache(SEQ, EMBED // HEADS))),
    Model("mlp_dropout", MlpDropout, lambda g: (tokens(g),), dropout=True),
    Model("cross_entropy_head", CrossEntropyHead,
          lambda g: (tokens(g), torch.randint(0, VOCAB, (BATCH, SEQ), generator=g))),
    Model("custom_functions_mlp", CustomFunctionsMlp, lambda g: (tokens(g),)),
    Model("gpt2_block", Gpt2Block, lambda g: (tokens(g),)),
    Model("bert_layer", BertLayer, lambda g: (tokens(g),)),
    Model("vit_layer", VitLayer, images),
    Model("qwen2_layer", Qwen2Layer, lambda g: (tokens(g),)),
    # bf16 autocast: the same blocks run under torch.autocast("cpu", dtype=torch.bfloat16), as
    # Thunder records it (prims.linear on bf16 operands, norms and softmax in f32).
    Model("llama_block_bf16", LlamaBlock, lambda g: (tokens(g), *rope_cache(SEQ, EMBED // HEADS)), autocast=True),
    Model("bert_layer_bf16", BertLayer, lambda g: (tokens(g),), autocast=True),
]


# ---- data parallelism: thunder.distributed.ddp / fsdp versions (tools/thunder_export.py) -----
class DistributedModel(Model):
    """A corpus model whose batch is split over the ranks: rank r gets its own draw (seed 1 + r) of
    the model's example inputs. Every rank builds the module with the same seed, as a job that
    initialises from one checkpoint does (ddp and fsdp broadcast nothing here)."""

    def rank_inputs(self, rank):
        g = torch.Generator().manual_seed(1 + rank)
        return self._inputs(g)


def batch(g):
    """Activations that need no gradient: data parallelism synchronizes the parameters' gradients."""
    return tokens(g, requires_grad=False)


class OddMlp(nn.Module):
    """Dims no world size divides (37, 5): fsdp pads each parameter's dim 0 to a multiple of the
    world size when it shards, and slices the padding off after gathering."""

    def __init__(self, n_embd=EMBED, hidden=37, out=5):
        super().__init__()
        self.fc1 = nn.Linear(n_embd, hidden)
        self.fc2 = nn.Linear(hidden, out)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


DISTRIBUTED = [
    DistributedModel("cross_entropy_head", CrossEntropyHead,
                     lambda g: (batch(g), torch.randint(0, VOCAB, (BATCH, SEQ), generator=g))),
    DistributedModel("llama_block", LlamaBlock, lambda g: (batch(g), *rope_cache(SEQ, EMBED // HEADS))),
    DistributedModel("odd_mlp", OddMlp, lambda g: (batch(g),)),
]


def distributed_model(name):
    return next(m for m in DISTRIBUTED if m.name == name)

# Third-party modules checked through torch.export only (tools/check_pt2.py): Thunder 0.2.6 fails
# on the transformers and torch.nn ones before thunder-gen sees them; it captures timm's, which are
# left out of the Thunder corpus for CI time. Last, a block written here (UNetResBlock), for the
# group norm no third-party block above has.
EXPORT_ONLY = [
    Model("qwen2_sdpa_layer", Qwen2SdpaLayer, lambda g: (tokens(g),)),
    Model("torch_encoder_layer", lambda: TorchEncoderLayer(batch_first=True, norm_first=False), lambda g: (tokens(g),)),
    Model("torch_encoder_layer_seq_first_prenorm", lambda: TorchEncoderLayer(batch_first=False, norm_first=True), lambda g: (tokens(g),)),
    Model("t5_block", T5Layer, lambda g: (tokens(g),)),
    Model("torch_decoder_layer", DecoderLayer, lambda g: (tokens(g), tokens(g))),
    Model("torch_cross_attention", CrossAttention,
          lambda g: (tokens(g), torch.randn(BATCH, 8, 32, generator=g).requires_grad_(True),
                     torch.randn(BATCH, 8, 48, generator=g).requires_grad_(True))),
    Model("timm_vit_block", TimmVitBlock, lambda g: (tokens(g),)),
    Model("timm_mixer_block", TimmMixerBlock, lambda g: (tokens(g),)),
    Model("timm_swiglu", TimmSwiGlu, lambda g: (tokens(g),)),
    Model("timm_convnext_block", TimmConvNextBlock, lambda g: (torch.randn(BATCH, 16, 8, 8, generator=g).requires_grad_(True),)),
    # (36x36 images: the stem's weight gradient sums over N*18*18 positions; at 48x48 (N*24*24)
    # the emulated GEMM's one running f32 sum per output, against eager's blocked ones, is past
    # the table's 1e-5 absolute)
    Model("timm_resnet", TimmResNet, lambda g: (torch.randn(BATCH, 3, 36, 36, generator=g).requires_grad_(True),)),
    Model("unet_resblock", UNetResBlock, lambda g: (torch.randn(BATCH, 32, 8, 8, generator=g).requires_grad_(True),)),
]
