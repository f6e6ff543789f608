// The PT2 reader's lowerings of the normalizations ATen keeps whole: group norm as a layer_norm
// over group rows, batch norm with its running statistics.
#include "frontend/pt2_lowering_builder.h"

namespace tg::pt2_lowering {
namespace {

// Batch normalization over [N, C, *] (every dim but the channels), ATen's forms:
//   batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
//     (the training IR; it updates the running statistics in place when training),
//   _native_batch_norm_legit_functional(..., training, momentum, eps) -> (out, mean, invstd,
//     new running_mean, new running_var) (Core ATen),
//   _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps),
//   _native_batch_norm_legit.no_stats(input, weight, bias, training, momentum, eps).
// Training normalizes by the batch's mean and biased variance, and moves each running statistic
// by momentum toward the batch's mean and unbiased variance, with no gradient through them; else
// the running statistics normalize.
class BatchNorm {
 public:
  explicit BatchNorm(Pt2Lowering& node) : node_(node), b_(node), x_(b_.input("input")) {
    if (x_.shape.size() < 2) b_.refuse("batch norm needs a [N, C, *] input, not rank " + std::to_string(x_.shape.size()));
    if (!is_float(x_.dtype)) b_.refuse("batch norm of a " + std::string(dtype_name(x_.dtype)) + " input");
    for (size_t d = 0; d < x_.shape.size(); ++d)
      if (d != 1) reduced_.push_back(int64_t(d));
    per_channel_ = Shape(x_.shape.size(), Dim::constant(1));
    per_channel_[1] = x_.shape[1];
  }

  std::vector<Doc> lower() {
    const bool has_stats = node_.args.contains("running_mean") && !node_.args.at("running_mean").is_null();
    const bool training = node_.args.contains("training") && b_.flag("training");  // (none: _no_training)
    if (!training && !has_stats) b_.refuse("batch norm in eval mode without running statistics");
    const Doc input = node_.args.at("input");
    std::string mean, var;
    if (training) {
      mean = b_.op("torch.mean", {{"a", input}, {"dim", reduced_}, {"keepdim", true}}, per_channel_, x_.dtype);
      var = b_.op("torch.var", {{"a", input}, {"dim", reduced_}, {"correction", 0}, {"keepdim", true}}, per_channel_, x_.dtype);
    } else {
      mean = channels_first("running_mean"), var = channels_first("running_var");
    }
    const std::string shifted = b_.op("torch.add", {{"a", var}, {"b", node_.args.at("eps")}}, per_channel_, x_.dtype);
    const std::string invstd = b_.op("torch.rsqrt", {{"a", shifted}}, per_channel_, x_.dtype);
    const std::string centered = b_.op("torch.sub", {{"a", input}, {"b", mean}}, x_.shape, x_.dtype);
    std::string y = b_.op("torch.mul", {{"a", centered}, {"b", invstd}}, x_.shape, x_.dtype);
    if (!node_.args.at("weight").is_null()) y = b_.op("torch.mul", {{"a", y}, {"b", channels_first("weight")}}, x_.shape, x_.dtype);
    if (!node_.args.at("bias").is_null()) y = b_.op("torch.add", {{"a", y}, {"b", channels_first("bias")}}, x_.shape, x_.dtype);
    b_.output(0, "torch.reshape", {{"a", y}, {"shape", size_list_json(x_.shape)}});
    if (node_.outs.size() >= 3 && training) {  // the batch's mean and 1 / std, [C]
      b_.output(1, "torch.reshape", {{"a", mean}, {"shape", size_list_json(node_.meta(node_.outs.at(1)).shape)}});
      b_.output(2, "torch.reshape", {{"a", invstd}, {"shape", size_list_json(node_.meta(node_.outs.at(2)).shape)}});
    }
    if (training && has_stats) update_running_statistics(mean);
    if (!training && node_.outs.size() == 5) {  // (the functional form in eval mode: the statistics unchanged)
      node_.aliases[node_.outs.at(3)] = b_.tensor("running_mean");
      node_.aliases[node_.outs.at(4)] = b_.tensor("running_var");
    }
    return b_.take();
  }

 private:
  Pt2Lowering& node_;
  Builder b_;
  const Value& x_;
  std::vector<int64_t> reduced_;
  Shape per_channel_;  // [1, C, 1, ...]

  // A [C] tensor argument of the input's dtype, refused otherwise.
  const Value& per_channel(const char* param) const {
    const Value& v = b_.input(param);
    if (v.shape.size() != 1 || int64_t(v.shape[0]) != int64_t(x_.shape[1]))
      b_.refuse(std::string("batch norm's ") + param + " must have one element per channel (" + std::to_string(int64_t(x_.shape[1])) + ")");
    if (v.dtype != x_.dtype)
      b_.refuse(std::string("batch norm's ") + param + " is " + std::string(dtype_name(v.dtype)) + ", its input " + std::string(dtype_name(x_.dtype)));
    return v;
  }
  // ... as [1, C, 1, ...], to broadcast against the input.
  std::string channels_first(const char* param) {
    const Value& v = per_channel(param);
    return b_.op("torch.reshape", {{"a", b_.tensor(param)}, {"shape", size_list_json(per_channel_)}}, per_channel_, v.dtype);
  }

  // running = (1 - momentum) * running + momentum * batch statistic (the variance unbiased),
  // detached: the node's outputs 3 and 4 where it has them (the functional form), else written
  // over the running statistics.
  void update_running_statistics(const std::string& mean) {
    if (node_.args.at("momentum").is_null()) b_.refuse("batch norm with momentum=None (a cumulative average) is not supported");
    const double momentum = b_.number("momentum");
    const Doc input = node_.args.at("input");
    const std::string unbiased = b_.op("torch.var", {{"a", input}, {"dim", reduced_}, {"correction", 1}, {"keepdim", true}}, per_channel_, x_.dtype);
    const bool functional = node_.outs.size() == 5;
    size_t out = 3;
    for (const auto& [param, batch] : {std::pair{"running_mean", mean}, std::pair{"running_var", unbiased}}) {
      const Value& running = per_channel(param);
      const std::string stopped = b_.op("torch.detach", {{"a", batch}}, per_channel_, x_.dtype);
      const std::string flat = b_.op("torch.reshape", {{"a", stopped}, {"shape", size_list_json(running.shape)}}, running.shape, x_.dtype);
      const std::string kept = b_.op("torch.mul", {{"a", b_.tensor(param)}, {"b", 1.0 - momentum}}, running.shape, running.dtype);
      const std::string moved = b_.op("torch.mul", {{"a", flat}, {"b", momentum}}, running.shape, running.dtype);
      if (functional) {
        b_.output(out++, "torch.add", {{"a", kept}, {"b", moved}});
      } else {
        node_.writes[b_.tensor(param)] = b_.op("torch.add", {{"a", kept}, {"b", moved}}, running.shape, running.dtype);
      }
    }
  }
};

}  // namespace

// group_norm(input, num_groups, weight, bias, eps) over [N, C, *]: layer_norm over each group's
// C / num_groups channels (its rows [N, num_groups, rest]), then the per-channel weight and bias.
// native_group_norm also gives each group's mean and 1 / std, [N, num_groups].
std::vector<Doc> group_norm(Pt2Lowering& node) {
  Builder b(node);
  const bool native = node.args.contains("group");
  const Doc input = node.args.at("input");
  const Value& in = b.input("input");
  const int64_t groups = b.integer(native ? "group" : "num_groups");
  if (in.shape.size() < 2) b.refuse("group_norm needs a [N, C, *] input, not rank " + std::to_string(in.shape.size()));
  const Dim& channels = in.shape[1];
  if (channels.symbolic()) b.refuse("group_norm over a symbolic channel count " + channels.expr()->text() + " is not supported");
  if (groups <= 0 || int64_t(channels) % groups != 0)
    b.refuse("group_norm of " + std::to_string(int64_t(channels)) + " channels into " + std::to_string(groups) + " groups");
  Shape group_rest = {Dim::constant(int64_t(channels) / groups)};
  group_rest.insert(group_rest.end(), in.shape.begin() + 2, in.shape.end());
  const Shape rows = {in.shape[0], Dim::constant(groups), numel_dim(group_rest)};
  const std::string grouped = b.op("torch.reshape", {{"a", input}, {"shape", size_list_json(rows)}}, rows, in.dtype);
  const Doc eps = node.args.at("eps");
  const Doc row_length = size_list_json({rows[2]});
  const std::string normed = b.op("torch.nn.functional.layer_norm", {{"a", grouped}, {"normalized_shape", row_length}, {"eps", eps}}, rows, in.dtype);
  std::string out = b.op("torch.reshape", {{"a", normed}, {"shape", size_list_json(in.shape)}}, in.shape, in.dtype);
  const DType result = node.meta(node.outs.at(0)).dtype;
  for (const char* affine : {"weight", "bias"}) {
    if (node.args.at(affine).is_null()) continue;
    const DType own = b.input(affine).dtype;
    const std::string per_channel = b.op("prims.broadcast_in_dim", {{"a", node.args.at(affine)}, {"shape", size_list_json(in.shape)}, {"broadcast_dimensions", {1}}},
                                         in.shape, own);
    out = b.op(affine == std::string("weight") ? "torch.mul" : "torch.add", {{"a", out}, {"b", per_channel}}, in.shape, result);
  }
  b.output(0, "torch.reshape", {{"a", out}, {"shape", size_list_json(in.shape)}});
  if (native && node.outs.size() == 3) {
    const Shape stats = {rows[0], rows[1]};
    const std::string mean = b.op("torch.mean", {{"a", grouped}, {"dim", {2}}}, stats, in.dtype);
    b.output(1, "torch.reshape", {{"a", mean}, {"shape", size_list_json(node.meta(node.outs.at(1)).shape)}});
    const std::string var = b.op("torch.var", {{"a", grouped}, {"dim", {2}}, {"correction", 0}}, stats, in.dtype);
    const std::string shifted = b.op("torch.add", {{"a", var}, {"b", eps}}, stats, in.dtype);
    const std::string rstd = b.op("torch.rsqrt", {{"a", shifted}}, stats, in.dtype);
    b.output(2, "torch.reshape", {{"a", rstd}, {"shape", size_list_json(node.meta(node.outs.at(2)).shape)}});
  }
  return b.take();
}

std::vector<Doc> batch_norm(Pt2Lowering& node) { return BatchNorm(node).lower(); }

}  // namespace tg::pt2_lowering
