"""Tally from Python: TorchMetrics-shaped metrics on Tally's compiled engine.

    import tally
    acc = tally.Metric("multiclass_accuracy", num_classes=3)
    acc.update(preds, target)          # tensors pass without a copy
    acc.compute()                      # tensor(0.75)

    metrics = tally.Collection({"f1": "multiclass_f1_score(num_classes=3, average='macro')",
                                "auroc": tally.Metric("multiclass_auroc", num_classes=3)})
    metrics(preds, target)             # forward: this batch's values, then accumulate
    metrics.compute()                  # {"f1": tensor(...), "auroc": tensor(...)}

A Metric or Collection is one compiled Tally program (one program for all
the metrics of a collection), compiled at the first update for that batch's
dtypes and dims. Under an initialised torch.distributed, compute() syncs over
the caller's own process group (2 collectives). Errors are ValueError (bad
input), MemoryError (the state budget) or RuntimeError, and leave the states
as they were. docs/python.md has the whole surface.
"""

import math
import numbers

import torch  # first: the extension takes torch's own tensor and group types

from tally import _tally

__version__ = _tally.__version__
__all__ = ["Metric", "Collection", "merge", "list_metrics", "spec"]

_POSITIONAL = ("preds", "target", "indexes")
_AGGREGATION_POSITIONAL = ("value", "weight")
# The state's key in state_dict(): one uint8 tensor holding a state file.
_STATE_KEY = "tally_state"


def list_metrics():
    """Every metric Tally has: a list of dicts with name, domain, inputs and
    arguments (each with its name, type, default and whether required)."""
    return _tally.list_metrics()


def _format(name, value):
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (set, frozenset)):
        return _format(name, sorted(value))  # panoptic_quality(things={0, 1}, ...), as TorchMetrics takes them
    if isinstance(value, (list, tuple)) and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
        return "[" + ", ".join(_format(name, v) for v in value) + "]"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(_format(name, v) for v in value) + "]"  # rouge_keys=("rouge1", "rougeL")
    if isinstance(value, torch.Tensor) and value.dim() <= 1:
        return _format(name, value.tolist())
    raise ValueError(f"argument '{name}': {type(value).__name__} values are not metric arguments "
                     "(numbers, strings, booleans, None or lists of numbers or of strings are)")


def spec(name, **arguments):
    """The spec string of a metric name and keyword arguments:
    spec("multiclass_f1_score", num_classes=3, average="macro") is
    "multiclass_f1_score(num_classes=3, average='macro')". A name that
    already carries arguments gets the keywords appended."""
    if not arguments:
        return name
    args = ", ".join(f"{k}={_format(k, v)}" for k, v in arguments.items())
    text = name.strip()
    if text.endswith(")"):
        inner = text[text.index("(") + 1:-1].strip()
        return f"{text[:-1]}{', ' if inner else ''}{args})"
    return f"{text}({args})"


def _name_of(spec_text):
    return spec_text.split("(", 1)[0].strip()


def _as_tensor(name, value):
    if isinstance(value, torch.Tensor):
        return value
    try:
        import numpy
        if isinstance(value, numpy.ndarray):
            return torch.from_numpy(value)  # shares the array's memory
    except ImportError:  # pragma: no cover - numpy is a torch dependency
        pass
    if isinstance(value, (numbers.Number, list, tuple)):
        t = torch.as_tensor(value)
        return t.reshape(1) if t.dim() == 0 else t  # a scalar is one row
    raise ValueError(f"input '{name}': expected a tensor, an array or numbers, got {type(value).__name__}")


class _Program(torch.nn.Module):
    """What Metric and Collection share: one native program and the
    TorchMetrics Metric methods over it."""

    def __init__(self, specs, *, device="cpu", max_state_bytes=0, sync_on_compute=True,
                 process_group=None, sync_timeout=30.0, native=None):
        super().__init__()
        self._native = native if native is not None else _tally.Program.create(
            list(specs), str(torch.device(device)), int(max_state_bytes))
        self.sync_on_compute = sync_on_compute
        self.process_group = process_group
        self.sync_timeout = sync_timeout
        self._persistent = True
        self._positional = None  # input names of positional arguments, from the first call
        self._agreed = False  # whether the ranks agreed on the inputs' signature (sync)

    # -- inputs -------------------------------------------------------------
    def _positional_names(self):
        if self._positional is None:
            reads = set()
            for s in self._native.specs:
                reads.update(_tally.metric_inputs(_name_of(s)) or ())
            aggregation = "value" in reads and "preds" not in reads
            self._positional = _AGGREGATION_POSITIONAL if aggregation else _POSITIONAL
        return self._positional

    def _inputs(self, args, kwargs):
        inputs = {}
        if args:
            names = self._positional_names()
            if len(args) > len(names):
                raise ValueError(f"{self._what()}: {len(args)} positional inputs, at most {len(names)} "
                                 f"({', '.join(names)}); pass others by name")
            for name, value in zip(names, args):
                inputs[name] = value
        for name, value in kwargs.items():
            if name in inputs:
                raise ValueError(f"{self._what()}: input '{name}' given twice")
            inputs[name] = value
        for name, value in inputs.items():
            if type(value) is not torch.Tensor:
                inputs[name] = _as_tensor(name, value)
        weight = inputs.get("weight")
        if weight is not None and weight.dim() <= 1 and weight.numel() == 1:
            rows = next((t.shape[0] for n, t in inputs.items() if n != "weight" and t.dim() > 0), None)
            if rows is not None and rows != 1:  # one weight for every row, as TorchMetrics broadcasts
                inputs["weight"] = weight.reshape(1).expand(rows)
        return inputs

    def _what(self):
        return ", ".join(self._native.specs)

    # -- TorchMetrics' Metric methods ---------------------------------------
    def update(self, *args, **kwargs):
        """Fold one batch into the states (the first batch fixes the inputs'
        dtypes and dims)."""
        if kwargs or not self._native.update_args(self._positional or self._positional_names(), *args):
            self._native.update(self._inputs(args, kwargs))

    def forward(self, *args, **kwargs):
        """This batch's values (as compute() over the batch alone), then the
        batch folded into the states, as TorchMetrics' forward."""
        return self._results(self._native.forward(self._inputs(args, kwargs)))

    def compute(self):
        """The value over every row so far; under torch.distributed (world
        size > 1, sync_on_compute) over every rank's rows."""
        synced = self.sync() if self.sync_on_compute else None
        try:
            return self._results(self._native.compute())
        finally:
            if synced is not None:
                self._native.unsync()

    def reset(self):
        self._native.reset()

    def merge_state(self, other):
        """Fold another metric's states (the same specs and inputs) into these."""
        if not isinstance(other, _Program):
            raise ValueError("merge_state: expected a tally Metric or Collection")
        self._native.merge(other._native)

    # -- distributed ----------------------------------------------------------
    def _group(self, group):
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            return None
        group = group if group is not None else self.process_group
        if group is None:
            group = dist.group.WORLD
        return group if dist.get_world_size(group) > 1 else None

    def sync(self, group=None, timeout=None):
        """Fold every rank's states over `group` (default: process_group,
        else the default group) for the next compute(); a no-op outside
        torch.distributed. Collective: every rank calls it. Returns what it
        did ({"collectives": 2, "bytes_sent": ...}) or None."""
        group = self._group(group)
        if group is None:
            return None
        if not self._agreed:
            if not self._agree_signature(group):
                return None  # no rank has seen an input: nothing to sync
            self._agreed = True
        return self._native.sync(group, float(self.sync_timeout if timeout is None else timeout))

    def _agree_signature(self, group):
        # The first sync of a metric: every rank sends the inputs'
        # signature it compiled for (None before any update) in one
        # all_gather_object over the caller's group, and a rank that has
        # seen no rows compiles for the first one, so that uneven shards
        # (a rank without data) sync too. Later syncs skip this.
        import torch.distributed as dist
        mine = self._native.signature if self._native.compiled else None
        gathered = [None] * dist.get_world_size(group)
        dist.all_gather_object(gathered, mine, group=group)
        signature = next((s for s in gathered if s is not None), None)
        if signature is None:
            return False
        if mine is None:
            self._native.prepare({name: torch.empty([1] + list(shape[1:]), dtype=dtype, device="meta")
                                  for name, dtype, shape in signature})
        return True

    def unsync(self):
        self._native.unsync()

    # -- placement ------------------------------------------------------------
    @property
    def device(self):
        return torch.device(self._native.device)

    def _apply(self, fn, *args, **kwargs):
        # Module.to / cuda / cpu: where `fn` sends a tensor of this device is
        # where the program goes (recompiled there, with its states).
        probe = fn(torch.empty((), device=self.device if self.device.type != "meta" else "cpu"))
        if probe.device != self.device:
            self._native.to(str(probe.device))
        return self

    # -- state ----------------------------------------------------------------
    def persistent(self, mode=False):
        """Whether state_dict() of a module holding this one includes its
        state (default True)."""
        self._persistent = mode

    def _state_bytes(self):
        return self._native.save_state() if self._native.compiled else b""

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        if self._persistent or not prefix:
            data = self._state_bytes()
            destination[prefix + _STATE_KEY] = torch.frombuffer(bytearray(data), dtype=torch.uint8) \
                if data else torch.empty(0, dtype=torch.uint8)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        key = prefix + _STATE_KEY
        if key not in state_dict:
            if strict and (self._persistent or not prefix):
                missing_keys.append(key)
            return
        data = state_dict[key]
        try:
            if data.numel() == 0:
                self._native.reset()
            else:
                self._native.load_state(data.cpu().numpy().tobytes())
        except ValueError as e:
            error_msgs.append(str(e))

    def save_state(self, path):
        """Write the state file of what compute() reads (tally merge and
        tally.merge read it)."""
        data = self._native.save_state()
        with open(path, "wb") as f:
            f.write(data)

    def __getstate__(self):
        state = self.__dict__.copy()
        native = state.pop("_native")
        state["_tally"] = (native.specs, native.device, self._state_bytes())
        return state

    def __setstate__(self, state):
        specs, device, data = state.pop("_tally")
        self.__dict__.update(state)
        self._native = (_tally.Program.from_state_files([("pickle", data)], device) if data
                        else _tally.Program.create(specs, device))

    # -- inspection -----------------------------------------------------------
    def inspect(self, format="text"):
        """The compiled program as text (format "text"), Graphviz ("dot"),
        JSON ("json") or TorchScript ("torchscript")."""
        return self._native.inspect(format)

    @property
    def specs(self):
        return list(self._native.specs)

    def extra_repr(self):
        return self._what()


class Metric(_Program):
    """One metric: tally.Metric("multiclass_f1_score(num_classes=10, average=macro)")
    or tally.Metric("multiclass_f1_score", num_classes=10, average="macro").
    compute() and forward() return a tensor (a tuple for curves, a dict
    for mean_average_precision).

    Options: device ("cpu", "cuda:1", ...), max_state_bytes (the state
    budget; 0: half the physical memory), sync_on_compute, process_group,
    sync_timeout (seconds per collective)."""

    def __init__(self, metric, *, device="cpu", max_state_bytes=0, sync_on_compute=True,
                 process_group=None, sync_timeout=30.0, _native=None, **arguments):
        text = spec(metric, **arguments) if _native is None else None
        super().__init__([text] if text else [], device=device, max_state_bytes=max_state_bytes,
                         sync_on_compute=sync_on_compute, process_group=process_group,
                         sync_timeout=sync_timeout, native=_native)

    def _results(self, values):
        return values[0]


class Collection(_Program):
    """Several metrics compiled into one program (shared states computed
    once): a list of specs or Metrics (keyed by metric name, made unique as
    "name_2"), or a dict of key -> spec or Metric. compute() and forward()
    return a dict. prefix/postfix decorate the keys, as TorchMetrics'
    MetricCollection."""

    def __init__(self, metrics, *, prefix=None, postfix=None, device=None, max_state_bytes=0,
                 sync_on_compute=True, process_group=None, sync_timeout=30.0, _native=None):
        keys = None
        if _native is None:
            if isinstance(metrics, (str, Metric)):
                metrics = [metrics]
            if isinstance(metrics, dict):
                keys = list(metrics.keys())
                metrics = list(metrics.values())
            specs = []
            for m in metrics:
                if isinstance(m, Metric):
                    specs.extend(m.specs)
                    if device is None:
                        device = m.device
                elif isinstance(m, str):
                    specs.append(m)
                else:
                    raise ValueError(f"Collection: expected specs or tally.Metric, got {type(m).__name__}")
        else:
            specs = []
        super().__init__(specs, device=device if device is not None else "cpu", max_state_bytes=max_state_bytes,
                         sync_on_compute=sync_on_compute, process_group=process_group,
                         sync_timeout=sync_timeout, native=_native)
        base = keys if keys is not None else self._native.labels
        self._keys = [f"{prefix or ''}{k}{postfix or ''}" for k in base]

    def keys(self):
        return list(self._keys)

    def _results(self, values):
        return dict(zip(self._keys, values))


def merge(paths, *, device="cpu", max_state_bytes=0):
    """Fold state files (save_state, `tally eval --save-state`, a server's
    /v1/state) into a Metric (one metric) or a Collection; compute() gives
    the value over every file's rows."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    files = []
    for p in paths:
        with open(p, "rb") as f:
            files.append((str(p), f.read()))
    native = _tally.Program.from_state_files(files, str(torch.device(device)), int(max_state_bytes))
    if len(native.specs) == 1:
        return Metric(None, _native=native)
    return Collection(None, _native=native)
