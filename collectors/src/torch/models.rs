//! The built-in models: tch's vision models and our own GPT-style
//! transformer, LSTM language model, DLRM-style recommender, actor-critic MLP
//! and DCGAN, plus any TorchScript file. Each is a [`Workload`]: random
//! inputs made once on the device (no data loading, as TorchBench does), a
//! train step (forward, loss, zero_grad, backward, optimizer step) and an
//! eval step (forward under `no_grad`).

use super::Precision;
use std::path::Path;
use tch::nn::{self, ModuleT, OptimizerConfig, RNN};
use tch::{Device, Kind, Tensor};

/// How a model is built.
#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// Where the model and its inputs live.
    pub device: Device,
    /// Batch size.
    pub batch_size: i64,
    /// Numeric precision; `Fp16`/`Bf16` convert weights and inputs.
    pub precision: Precision,
    /// Tiny sizes (small images, few layers) for tests on a CPU.
    pub small: bool,
}

/// One model ready to run.
pub trait Workload {
    /// One training step: zero_grad, forward, loss, backward, optimizer
    /// step. Returns the loss (a scalar, not yet synchronised).
    fn train_step(&mut self) -> Tensor;
    /// One inference pass with no autograd. Returns the output.
    fn eval_step(&mut self) -> Tensor;
}

/// A built-in model in the registry.
#[derive(Debug)]
pub struct ModelInfo {
    /// Name on the command line.
    pub name: &'static str,
    /// One line about what it is.
    pub about: &'static str,
    /// Batch size when none is given (train; eval uses the same).
    pub default_batch_size: i64,
    build: fn(&ModelConfig) -> Box<dyn Workload>,
}

impl ModelInfo {
    /// Builds the model, its optimizer and its inputs.
    pub fn build(&self, cfg: &ModelConfig) -> Box<dyn Workload> {
        (self.build)(cfg)
    }
}

/// Every built-in model, in the order `bench all` runs them.
pub const MODELS: &[ModelInfo] = &[
    ModelInfo {
        name: "resnet18",
        about: "ResNet-18 (tch vision), ImageNet-sized input",
        default_batch_size: 32,
        build: |c| vision(c, Vision::Resnet18),
    },
    ModelInfo {
        name: "resnet50",
        about: "ResNet-50 (tch vision)",
        default_batch_size: 32,
        build: |c| vision(c, Vision::Resnet50),
    },
    ModelInfo {
        name: "mobilenet_v2",
        about: "MobileNetV2 (tch vision)",
        default_batch_size: 32,
        build: |c| vision(c, Vision::MobilenetV2),
    },
    ModelInfo {
        name: "vgg16",
        about: "VGG-16 (tch vision)",
        default_batch_size: 16,
        build: |c| vision(c, Vision::Vgg16),
    },
    ModelInfo {
        name: "densenet121",
        about: "DenseNet-121 (tch vision)",
        default_batch_size: 16,
        build: |c| vision(c, Vision::Densenet121),
    },
    ModelInfo {
        name: "squeezenet1_1",
        about: "SqueezeNet 1.1 (tch vision)",
        default_batch_size: 32,
        build: |c| vision(c, Vision::Squeezenet),
    },
    ModelInfo {
        name: "alexnet",
        about: "AlexNet (tch vision)",
        default_batch_size: 32,
        build: |c| vision(c, Vision::Alexnet),
    },
    ModelInfo {
        name: "efficientnet_b0",
        about: "EfficientNet-B0 (tch vision)",
        default_batch_size: 32,
        build: |c| vision(c, Vision::EfficientnetB0),
    },
    ModelInfo {
        name: "inception_v3",
        about: "Inception v3 (tch vision), 299x299 input",
        default_batch_size: 16,
        build: |c| vision(c, Vision::InceptionV3),
    },
    ModelInfo {
        name: "gpt",
        about: "GPT-style decoder (ours): causal attention, next-token loss",
        default_batch_size: 8,
        build: gpt,
    },
    ModelInfo {
        name: "lstm",
        about: "LSTM language model (ours): embedding, 2-layer LSTM, next-token loss",
        default_batch_size: 32,
        build: lstm,
    },
    ModelInfo {
        name: "dlrm",
        about: "DLRM-style recommender (ours): embedding tables, bottom/top MLPs, dot interaction",
        default_batch_size: 2048,
        build: dlrm,
    },
    ModelInfo {
        name: "actor_critic",
        about: "Actor-critic MLP (ours): policy-gradient and value loss",
        default_batch_size: 256,
        build: actor_critic,
    },
    ModelInfo {
        name: "dcgan",
        about: "DCGAN (ours): generator and discriminator steps, 64x64 images",
        default_batch_size: 64,
        build: dcgan,
    },
];

/// The built-in model called `name`.
pub fn find(name: &str) -> Option<&'static ModelInfo> {
    MODELS.iter().find(|m| m.name == name)
}

/// The floating-point kind weights and inputs are stored in.
fn float_kind(p: Precision) -> Kind {
    match p {
        Precision::Fp16 => Kind::Half,
        Precision::Bf16 => Kind::BFloat16,
        _ => Kind::Float,
    }
}

/// Converts the variables to the precision's storage kind.
fn set_precision(vs: &mut nn::VarStore, p: Precision) {
    match p {
        Precision::Fp16 => vs.half(),
        Precision::Bf16 => vs.bfloat16(),
        _ => {}
    }
}

fn randn(shape: &[i64], cfg: &ModelConfig) -> Tensor {
    Tensor::randn(shape, (float_kind(cfg.precision), cfg.device))
}

fn randint(high: i64, shape: &[i64], cfg: &ModelConfig) -> Tensor {
    Tensor::randint(high, shape, (Kind::Int64, cfg.device))
}

fn amp<T>(cfg_amp: bool, f: impl FnOnce() -> T) -> T {
    if cfg_amp {
        tch::autocast(true, f)
    } else {
        f()
    }
}

/// A network trained with one optimizer on one fixed batch.
struct Supervised {
    _vs: nn::VarStore,
    net: Box<dyn ModuleT>,
    opt: nn::Optimizer,
    input: Tensor,
    target: Tensor,
    loss: fn(&Tensor, &Tensor) -> Tensor,
    amp: bool,
}

impl Workload for Supervised {
    fn train_step(&mut self) -> Tensor {
        self.opt.zero_grad();
        let loss = amp(self.amp, || {
            let out = self.net.forward_t(&self.input, true);
            (self.loss)(&out.to_kind(Kind::Float), &self.target)
        });
        loss.backward();
        self.opt.step();
        loss.detach()
    }

    fn eval_step(&mut self) -> Tensor {
        tch::no_grad(|| amp(self.amp, || self.net.forward_t(&self.input, false)))
    }
}

fn classification(logits: &Tensor, target: &Tensor) -> Tensor {
    logits.cross_entropy_for_logits(target)
}

/// Next-token loss: logits [B, T, V] against tokens [B, T].
fn next_token(logits: &Tensor, target: &Tensor) -> Tensor {
    let v = logits.size()[2];
    logits.view([-1, v]).cross_entropy_for_logits(&target.view([-1]))
}

enum Vision {
    Resnet18,
    Resnet50,
    MobilenetV2,
    Vgg16,
    Densenet121,
    Squeezenet,
    Alexnet,
    EfficientnetB0,
    InceptionV3,
}

fn vision(cfg: &ModelConfig, which: Vision) -> Box<dyn Workload> {
    use tch::vision as v;
    let mut vs = nn::VarStore::new(cfg.device);
    let classes = if cfg.small { 10 } else { 1000 };
    let p = vs.root();
    // Image side: ImageNet's 224 (299 for Inception); the smallest the model
    // accepts when small (VGG and DenseNet flatten a fixed 7x7 map).
    let (net, side): (Box<dyn ModuleT>, i64) = match which {
        Vision::Resnet18 => (Box::new(v::resnet::resnet18(&p, classes)), 64),
        Vision::Resnet50 => (Box::new(v::resnet::resnet50(&p, classes)), 64),
        Vision::MobilenetV2 => (Box::new(v::mobilenet::v2(&p, classes)), 64),
        Vision::Vgg16 => (Box::new(v::vgg::vgg16(&p, classes)), 224),
        Vision::Densenet121 => (Box::new(v::densenet::densenet121(&p, classes)), 224),
        Vision::Squeezenet => (Box::new(v::squeezenet::v1_1(&p, classes)), 64),
        Vision::Alexnet => (Box::new(v::alexnet::alexnet(&p, classes)), 128),
        Vision::EfficientnetB0 => (Box::new(v::efficientnet::b0(&p, classes)), 64),
        Vision::InceptionV3 => (Box::new(v::inception::v3(&p, classes)), 160),
    };
    let side = match (cfg.small, which) {
        (true, _) => side,
        (false, Vision::InceptionV3) => 299,
        (false, _) => 224,
    };
    set_precision(&mut vs, cfg.precision);
    let opt = nn::Sgd {
        momentum: 0.9,
        ..Default::default()
    }
    // VGG has no batch norm: a larger rate diverges within two steps on
    // random data.
    .build(&vs, 1e-3)
    .expect("SGD over the model's variables");
    let b = cfg.batch_size;
    Box::new(Supervised {
        input: randn(&[b, 3, side, side], cfg),
        target: randint(classes, &[b], cfg),
        net,
        opt,
        _vs: vs,
        loss: classification,
        amp: cfg.precision == Precision::Amp,
    })
}

/// Sizes of our transformer.
struct GptSize {
    vocab: i64,
    dim: i64,
    heads: i64,
    layers: i64,
    seq: i64,
}

#[derive(Debug)]
struct Block {
    ln1: nn::LayerNorm,
    qkv: nn::Linear,
    proj: nn::Linear,
    ln2: nn::LayerNorm,
    fc: nn::Linear,
    out: nn::Linear,
    heads: i64,
}

impl Block {
    fn new(p: &nn::Path, dim: i64, heads: i64) -> Self {
        let lin = Default::default;
        Block {
            ln1: nn::layer_norm(p / "ln1", vec![dim], Default::default()),
            qkv: nn::linear(p / "qkv", dim, 3 * dim, lin()),
            proj: nn::linear(p / "proj", dim, dim, lin()),
            ln2: nn::layer_norm(p / "ln2", vec![dim], Default::default()),
            fc: nn::linear(p / "fc", dim, 4 * dim, lin()),
            out: nn::linear(p / "out", 4 * dim, dim, lin()),
            heads,
        }
    }

    fn forward(&self, x: &Tensor, train: bool) -> Tensor {
        let (b, t, d) = x.size3().expect("[batch, time, dim]");
        let h = self.heads;
        let qkv = x
            .apply(&self.ln1)
            .apply(&self.qkv)
            .view([b, t, 3, h, d / h])
            .permute([2, 0, 3, 1, 4]);
        let (q, k, v) = (qkv.get(0), qkv.get(1), qkv.get(2));
        let dropout = if train { 0.1 } else { 0.0 };
        let y = Tensor::scaled_dot_product_attention::<Tensor>(&q, &k, &v, None, dropout, true, None, false);
        let y = y.transpose(1, 2).contiguous().view([b, t, d]).apply(&self.proj);
        let x = x + y;
        let m = x.apply(&self.ln2).apply(&self.fc).gelu("tanh").apply(&self.out);
        x + m
    }
}

#[derive(Debug)]
struct Gpt {
    tok: nn::Embedding,
    pos: nn::Embedding,
    blocks: Vec<Block>,
    ln: nn::LayerNorm,
    head: nn::Linear,
}

impl ModuleT for Gpt {
    fn forward_t(&self, tokens: &Tensor, train: bool) -> Tensor {
        let t = tokens.size()[1];
        let pos = Tensor::arange(t, (Kind::Int64, tokens.device()));
        let mut x = tokens.apply(&self.tok) + pos.apply(&self.pos);
        for b in &self.blocks {
            x = b.forward(&x, train);
        }
        x.apply(&self.ln).apply(&self.head)
    }
}

fn gpt(cfg: &ModelConfig) -> Box<dyn Workload> {
    let s = if cfg.small {
        GptSize {
            vocab: 256,
            dim: 64,
            heads: 4,
            layers: 2,
            seq: 32,
        }
    } else {
        GptSize {
            vocab: 8192,
            dim: 512,
            heads: 8,
            layers: 6,
            seq: 256,
        }
    };
    let mut vs = nn::VarStore::new(cfg.device);
    let p = vs.root();
    let net = Gpt {
        tok: nn::embedding(&p / "tok", s.vocab, s.dim, Default::default()),
        pos: nn::embedding(&p / "pos", s.seq, s.dim, Default::default()),
        blocks: (0..s.layers)
            .map(|i| Block::new(&(&p / "h" / i), s.dim, s.heads))
            .collect(),
        ln: nn::layer_norm(&p / "ln", vec![s.dim], Default::default()),
        head: nn::linear(&p / "head", s.dim, s.vocab, Default::default()),
    };
    set_precision(&mut vs, cfg.precision);
    let opt = nn::AdamW::default()
        .build(&vs, 3e-4)
        .expect("AdamW over the model's variables");
    let tokens = randint(s.vocab, &[cfg.batch_size, s.seq + 1], cfg);
    Box::new(Supervised {
        input: tokens.narrow(1, 0, s.seq),
        target: tokens.narrow(1, 1, s.seq).contiguous(),
        net: Box::new(net),
        opt,
        _vs: vs,
        loss: next_token,
        amp: cfg.precision == Precision::Amp,
    })
}

#[derive(Debug)]
struct LstmLm {
    emb: nn::Embedding,
    lstm: nn::LSTM,
    head: nn::Linear,
}

impl ModuleT for LstmLm {
    fn forward_t(&self, tokens: &Tensor, _train: bool) -> Tensor {
        let x = tokens.apply(&self.emb);
        let (out, _) = self.lstm.seq(&x);
        out.apply(&self.head)
    }
}

fn lstm(cfg: &ModelConfig) -> Box<dyn Workload> {
    let (vocab, dim, hidden, seq) = if cfg.small {
        (128, 32, 64, 16)
    } else {
        (10000, 512, 1024, 64)
    };
    let mut vs = nn::VarStore::new(cfg.device);
    let p = vs.root();
    let net = LstmLm {
        emb: nn::embedding(&p / "emb", vocab, dim, Default::default()),
        lstm: nn::lstm(
            &p / "lstm",
            dim,
            hidden,
            nn::RNNConfig {
                num_layers: 2,
                batch_first: true,
                ..Default::default()
            },
        ),
        head: nn::linear(&p / "head", hidden, vocab, Default::default()),
    };
    set_precision(&mut vs, cfg.precision);
    let opt = nn::Adam::default()
        .build(&vs, 1e-3)
        .expect("Adam over the model's variables");
    let tokens = randint(vocab, &[cfg.batch_size, seq + 1], cfg);
    Box::new(Supervised {
        input: tokens.narrow(1, 0, seq),
        target: tokens.narrow(1, 1, seq).contiguous(),
        net: Box::new(net),
        opt,
        _vs: vs,
        loss: next_token,
        amp: cfg.precision == Precision::Amp,
    })
}

fn mlp(p: &nn::Path, sizes: &[i64], last_relu: bool) -> nn::Sequential {
    let mut s = nn::seq();
    for (i, w) in sizes.windows(2).enumerate() {
        s = s.add(nn::linear(p / i, w[0], w[1], Default::default()));
        if i + 2 < sizes.len() || last_relu {
            s = s.add_fn(|x| x.relu());
        }
    }
    s
}

#[derive(Debug)]
struct Dlrm {
    bottom: nn::Sequential,
    tables: Vec<nn::Embedding>,
    top: nn::Sequential,
    dense: i64,
}

impl ModuleT for Dlrm {
    /// `input`: [B, dense + tables]: dense features, then one row index per
    /// table (stored as floats so one tensor carries both).
    fn forward_t(&self, input: &Tensor, _train: bool) -> Tensor {
        let dense = input.narrow(1, 0, self.dense);
        let ids = input
            .narrow(1, self.dense, self.tables.len() as i64)
            .to_kind(Kind::Int64);
        let x = dense.apply(&self.bottom);
        let mut feats = vec![x.shallow_clone()];
        for (i, t) in self.tables.iter().enumerate() {
            feats.push(ids.select(1, i as i64).apply(t));
        }
        // Pairwise dot products of all feature vectors (DLRM's interaction).
        let z = Tensor::stack(&feats, 1);
        let inter = z.bmm(&z.transpose(1, 2));
        let n = feats.len() as i64;
        let (li, lj) = {
            let idx = Tensor::ones([n, n], (Kind::Bool, input.device()))
                .tril(-1)
                .nonzero();
            (idx.select(1, 0), idx.select(1, 1))
        };
        let pairs = inter.index(&[None, Some(li), Some(lj)]);
        Tensor::cat(&[x, pairs], 1).apply(&self.top).squeeze_dim(1)
    }
}

fn dlrm(cfg: &ModelConfig) -> Box<dyn Workload> {
    let (dense, tables, rows, dim) = if cfg.small {
        (13, 4, 1000, 16)
    } else {
        (13, 26, 100_000, 64)
    };
    let mut vs = nn::VarStore::new(cfg.device);
    let p = vs.root();
    let n = tables + 1;
    let top_in = dim + n * (n - 1) / 2;
    let net = Dlrm {
        bottom: mlp(&(&p / "bottom"), &[dense, 512, 256, dim], true),
        tables: (0..tables)
            .map(|i| nn::embedding(&p / "emb" / i, rows, dim, Default::default()))
            .collect(),
        top: mlp(&(&p / "top"), &[top_in, 512, 256, 1], false),
        dense,
    };
    set_precision(&mut vs, cfg.precision);
    let opt = nn::Sgd::default()
        .build(&vs, 0.01)
        .expect("SGD over the model's variables");
    let b = cfg.batch_size;
    let kind = float_kind(cfg.precision);
    let ids = randint(rows, &[b, tables], cfg).to_kind(kind);
    let input = Tensor::cat(&[randn(&[b, dense], cfg), ids], 1);
    let target = Tensor::randint(2, [b], (Kind::Float, cfg.device));
    Box::new(Supervised {
        input,
        target,
        net: Box::new(net),
        opt,
        _vs: vs,
        loss: |logits, target| {
            logits.binary_cross_entropy_with_logits::<Tensor>(target, None, None, tch::Reduction::Mean)
        },
        amp: cfg.precision == Precision::Amp,
    })
}

/// Actor-critic: a shared MLP trunk, a policy head and a value head, trained
/// on a batch of (state, action, return) as A2C does.
struct ActorCritic {
    _vs: nn::VarStore,
    trunk: nn::Sequential,
    actor: nn::Linear,
    critic: nn::Linear,
    opt: nn::Optimizer,
    states: Tensor,
    actions: Tensor,
    returns: Tensor,
    amp: bool,
}

impl ActorCritic {
    fn heads(&self) -> (Tensor, Tensor) {
        let h = self.states.apply(&self.trunk);
        (h.apply(&self.actor), h.apply(&self.critic).squeeze_dim(1))
    }
}

impl Workload for ActorCritic {
    fn train_step(&mut self) -> Tensor {
        self.opt.zero_grad();
        let loss = amp(self.amp, || {
            let (logits, value) = self.heads();
            let (logits, value) = (logits.to_kind(Kind::Float), value.to_kind(Kind::Float));
            let log_probs = logits.log_softmax(-1, Kind::Float);
            let probs = log_probs.exp();
            let taken = log_probs
                .gather(1, &self.actions.unsqueeze(1), false)
                .squeeze_dim(1);
            let advantage = &self.returns - value.detach();
            let policy = -(taken * advantage).mean(Kind::Float);
            let critic = (&self.returns - &value).square().mean(Kind::Float);
            let entropy = -(probs * log_probs)
                .sum_dim_intlist(-1, false, Kind::Float)
                .mean(Kind::Float);
            policy + critic * 0.5 - entropy * 0.01
        });
        loss.backward();
        self.opt.step();
        loss.detach()
    }

    fn eval_step(&mut self) -> Tensor {
        tch::no_grad(|| amp(self.amp, || self.heads().0.softmax(-1, Kind::Float)))
    }
}

fn actor_critic(cfg: &ModelConfig) -> Box<dyn Workload> {
    let (obs, hidden, actions) = if cfg.small { (16, 64, 4) } else { (128, 512, 18) };
    let mut vs = nn::VarStore::new(cfg.device);
    let p = vs.root();
    let trunk = mlp(&(&p / "trunk"), &[obs, hidden, hidden], true);
    let actor = nn::linear(&p / "actor", hidden, actions, Default::default());
    let critic = nn::linear(&p / "critic", hidden, 1, Default::default());
    set_precision(&mut vs, cfg.precision);
    let opt = nn::Adam::default()
        .build(&vs, 7e-4)
        .expect("Adam over the model's variables");
    let b = cfg.batch_size;
    Box::new(ActorCritic {
        trunk,
        actor,
        critic,
        opt,
        _vs: vs,
        states: randn(&[b, obs], cfg),
        actions: randint(actions, &[b], cfg),
        returns: Tensor::randn([b], (Kind::Float, cfg.device)),
        amp: cfg.precision == Precision::Amp,
    })
}

/// DCGAN (Radford et al.): a generator of `side`x`side` images from noise and
/// a discriminator; one train step is a discriminator step on real and fake
/// images, then a generator step.
struct Dcgan {
    _g_vs: nn::VarStore,
    _d_vs: nn::VarStore,
    g: nn::SequentialT,
    d: nn::SequentialT,
    g_opt: nn::Optimizer,
    d_opt: nn::Optimizer,
    noise: Tensor,
    real: Tensor,
    amp: bool,
}

fn bce(logits: &Tensor, label: f64) -> Tensor {
    let target = logits.to_kind(Kind::Float).full_like(label);
    logits
        .to_kind(Kind::Float)
        .binary_cross_entropy_with_logits::<Tensor>(&target, None, None, tch::Reduction::Mean)
}

impl Workload for Dcgan {
    fn train_step(&mut self) -> Tensor {
        let fake = amp(self.amp, || self.g.forward_t(&self.noise, true));
        self.d_opt.zero_grad();
        let d_loss = amp(self.amp, || {
            bce(&self.d.forward_t(&self.real, true), 1.0) + bce(&self.d.forward_t(&fake.detach(), true), 0.0)
        });
        d_loss.backward();
        self.d_opt.step();
        self.g_opt.zero_grad();
        let g_loss = amp(self.amp, || bce(&self.d.forward_t(&fake, true), 1.0));
        g_loss.backward();
        self.g_opt.step();
        (d_loss + g_loss).detach()
    }

    fn eval_step(&mut self) -> Tensor {
        tch::no_grad(|| amp(self.amp, || self.g.forward_t(&self.noise, false)))
    }
}

fn dcgan(cfg: &ModelConfig) -> Box<dyn Workload> {
    // Feature widths; 64x64 images from 4 transposed convolutions (32x32
    // from 3 when small).
    let (nz, ngf, ndf, layers) = if cfg.small {
        (16, 8, 8, 3)
    } else {
        (100, 64, 64, 4)
    };
    let side = 4 << layers;
    let mut g_vs = nn::VarStore::new(cfg.device);
    let mut d_vs = nn::VarStore::new(cfg.device);
    let (gp, dp) = (g_vs.root(), d_vs.root());
    let tconv = |p: nn::Path, i, o, stride, pad| {
        nn::conv_transpose2d(
            p,
            i,
            o,
            4,
            nn::ConvTransposeConfig {
                stride,
                padding: pad,
                bias: false,
                ..Default::default()
            },
        )
    };
    let conv = |p: nn::Path, i, o, stride, pad| {
        nn::conv2d(
            p,
            i,
            o,
            4,
            nn::ConvConfig {
                stride,
                padding: pad,
                bias: false,
                ..Default::default()
            },
        )
    };
    let mut g = nn::seq_t();
    let mut width = ngf << (layers - 1);
    g = g
        .add(tconv(&gp / "0", nz, width, 1, 0))
        .add(nn::batch_norm2d(&gp / "bn0", width, Default::default()))
        .add_fn(|x| x.relu());
    for i in 1..layers {
        g = g
            .add(tconv(&gp / i, width, width / 2, 2, 1))
            .add(nn::batch_norm2d(
                &gp / format!("bn{i}"),
                width / 2,
                Default::default(),
            ))
            .add_fn(|x| x.relu());
        width /= 2;
    }
    g = g.add(tconv(&gp / layers, width, 3, 2, 1)).add_fn(|x| x.tanh());
    let mut d = nn::seq_t();
    let mut width = ndf;
    d = d.add(conv(&dp / "0", 3, width, 2, 1)).add_fn(|x| x.leaky_relu());
    for i in 1..layers {
        d = d
            .add(conv(&dp / i, width, width * 2, 2, 1))
            .add(nn::batch_norm2d(
                &dp / format!("bn{i}"),
                width * 2,
                Default::default(),
            ))
            .add_fn(|x| x.leaky_relu());
        width *= 2;
    }
    d = d
        .add(conv(&dp / layers, width, 1, 1, 0))
        .add_fn(|x| x.flatten(1, -1));
    set_precision(&mut g_vs, cfg.precision);
    set_precision(&mut d_vs, cfg.precision);
    let adam = || nn::Adam {
        beta1: 0.5,
        ..Default::default()
    };
    let g_opt = adam().build(&g_vs, 2e-4).expect("Adam over the generator");
    let d_opt = adam().build(&d_vs, 2e-4).expect("Adam over the discriminator");
    let b = cfg.batch_size;
    Box::new(Dcgan {
        g,
        d,
        g_opt,
        d_opt,
        _g_vs: g_vs,
        _d_vs: d_vs,
        noise: randn(&[b, nz, 1, 1], cfg),
        real: randn(&[b, 3, side, side], cfg).tanh(),
        amp: cfg.precision == Precision::Amp,
    })
}

/// A TorchScript module (`torch.jit.trace`/`script` + `.save`) run on a
/// random input of a given shape. Eval is `forward`; train uses the mean of
/// the output as the loss (the file carries no loss), then backward and an
/// SGD step over the module's parameters.
pub struct TorchScript {
    _vs: nn::VarStore,
    module: tch::TrainableCModule,
    opt: Option<nn::Optimizer>,
    input: Tensor,
    amp: bool,
}

impl TorchScript {
    /// Loads `path` onto the device; `shape` is the input's shape. `train`
    /// also sets up the optimizer (a module with no parameters cannot
    /// train).
    pub fn load(path: &Path, shape: &[i64], cfg: &ModelConfig, train: bool) -> Result<Self, tch::TchError> {
        let mut vs = nn::VarStore::new(cfg.device);
        let module = tch::TrainableCModule::load(path, vs.root())?;
        set_precision(&mut vs, cfg.precision);
        let opt = if train {
            Some(nn::Sgd::default().build(&vs, 0.01)?)
        } else {
            None
        };
        Ok(TorchScript {
            _vs: vs,
            module,
            opt,
            input: randn(shape, cfg),
            amp: cfg.precision == Precision::Amp,
        })
    }
}

impl Workload for TorchScript {
    fn train_step(&mut self) -> Tensor {
        let opt = self.opt.as_mut().expect("loaded with train = true");
        opt.zero_grad();
        let loss = amp(self.amp, || {
            self.module
                .forward_t(&self.input, true)
                .to_kind(Kind::Float)
                .mean(Kind::Float)
        });
        loss.backward();
        opt.step();
        loss.detach()
    }

    fn eval_step(&mut self) -> Tensor {
        tch::no_grad(|| amp(self.amp, || self.module.forward_t(&self.input, false)))
    }
}
