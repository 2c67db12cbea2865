// Writes the seed corpora of the fuzz targets (targets.h): a few valid inputs
// per target and near-valid ones (one field off), each small.
//
//   bazel run //tests/fuzz:make_corpus -- $PWD/tests/fuzz/corpus
//
// Rewrites the files it names and leaves others (hand-added seeds) alone.
#include <ATen/ATen.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/io/npy.h"
#include "engine/ir/printer.h"
#include "engine/persist/checkpoint_format.h"
#include "tests/fuzz/fuzz_fixtures.h"

namespace tally::fuzz {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.flush()) {
    std::fprintf(stderr, "make_corpus: cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// An .npy file with a hand-written header dict (padded to 64 bytes).
std::string Npy(int major, const std::string& dict, const std::string& data) {
  const size_t len_width = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + len_width + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_width; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

void NpySeeds(const fs::path& dir) {
  auto array = [](io::NpyDType dtype, std::vector<int64_t> shape, std::string data) {
    io::NpyArray a;
    a.dtype = dtype;
    a.shape = std::move(shape);
    a.data = std::move(data);
    return io::SerializeNpy(a);
  };
  Write(dir, "bool_3.npy", array(io::NpyDType::kBool, {3}, std::string("\0\1\1", 3)));
  Write(dir, "i4_2x2.npy", array(io::NpyDType::kInt32, {2, 2}, Bytes<int32_t>({1, -2, 3, 4})));
  Write(dir, "i8_3.npy", array(io::NpyDType::kInt64, {3}, Bytes<int64_t>({0, 1, 2})));
  Write(dir, "f4_scalar.npy", array(io::NpyDType::kFloat32, {}, Bytes<float>({0.5f})));
  Write(dir, "f8_2x3.npy", array(io::NpyDType::kFloat64, {2, 3}, Bytes<double>({1, 2, 3, 4, 5, 6})));
  Write(dir, "f4_0x4.npy", array(io::NpyDType::kFloat32, {0, 4}, ""));
  Write(dir, "u2_big_endian.npy",
        Npy(1, "{'descr': '>u2', 'fortran_order': False, 'shape': (3,), }", std::string("\0\1\1\0\xff\xff", 6)));
  Write(dir, "f2_half.npy",
        Npy(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", std::string("\0\x3c\x01\x00", 4)));
  Write(dir, "u1_v2.npy", Npy(2, "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", "\1\2\3\4"));
  Write(dir, "u8_v3.npy",
        Npy(3, "{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }", Bytes<uint64_t>({7, ~uint64_t{0}})));
  Write(dir, "f8_fortran_2x3.npy",
        Npy(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", Bytes<double>({1, 4, 2, 5, 3, 6})));
  Write(dir, "i2_long_suffix.npy",
        Npy(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (2L,), }", std::string("\xff\xff\1\0", 4)));
  Write(dir, "truncated.npy", Npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", "\1\0\0\0"));
  Write(dir, "trailing.npy", Npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", "\1\0"));
  Write(dir, "huge_shape.npy",
        Npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 3), }", "\0\0\0\0\0\0\0\0"));
  Write(dir, "complex.npy", Npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "\0\0\0\0\0\0\0\0"));
}

void MetricSpecSeeds(const fs::path& dir) {
  const std::vector<std::string> specs = {
      "accuracy(task=binary)",
      "multiclass_accuracy(num_classes=5, average=macro, top_k=2)",
      "binary_precision(threshold=0.3)",
      "binned_auroc(thresholds=[0.1, 0.5, 0.9], label='p(y)')",
      "binary_auroc(max_fpr=0.5, thresholds=exact16)",
      "multiclass_f1_score(num_classes=3, average=none, ignore_index=-1)",
      "mean_squared_error(squared=False)",
      "retrieval_ndcg(top_k=3, empty_target_action=skip)",
      "sum",
      "binary_calibration_error(n_bins=10, norm=l1)",
      "m(a=none, b=True, c=-1, d=+3, e=1e-6, f=.5, g=-inf, h=nan, i=v1.2, j=\"q\\\"\\n\", k=[], l=[1, 2.5],)",
      "multiclass_accuracy(num_classes=)",
      "binary_auroc(thresholds=[0.1, 0.5",
  };
  for (size_t i = 0; i < specs.size(); ++i) Write(dir, absl::StrCat("spec_", i), specs[i]);
}

void IrSeeds(const fs::path& dir) {
  for (size_t i = 0; i < StatePrograms().size(); ++i) {
    Write(dir, absl::StrCat("state_program_", i, ".ir"), ir::PrintModule(StatePrograms()[i]->module()));
  }
  std::unique_ptr<Program> reg = CompileForFuzz(
      {"mean_squared_error", "pearson_corrcoef", "mean"},
      {{"preds", ir::DType::kFloat32, {4}}, {"target", ir::DType::kFloat32, {4}}, {"value", ir::DType::kFloat32, {4}}});
  Write(dir, "regression.ir", ir::PrintModule(reg->module()));
  Write(dir, "graph.ir", ir::PrintGraph(*reg->module().update));
}

// Checkpoint seeds are payloads (the target frames them), plus one whole
// framed file for Unframe.
void CheckpointSeeds(const fs::path& dir) {
  const fs::path file = fs::temp_directory_path() / absl::StrCat("tally_make_corpus.", getpid());
  auto payload = [&](Session& s) {
    if (!s.SaveCheckpoint(file.string()).ok()) std::abort();
    std::ifstream in(file, std::ios::binary);
    std::string framed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(file);
    absl::StatusOr<absl::string_view> p = persist::Unframe(framed, "seed");
    if (!p.ok()) std::abort();
    return std::make_pair(framed, std::string(*p));
  };
  std::unique_ptr<Session> s = NewCheckpointSession();
  Write(dir, "fresh.payload", payload(*s).second);
  for (int i = 0; i < 3; ++i) {
    if (!s->Update(CheckpointSessionRows()).ok()) std::abort();
  }
  auto [framed, updated] = payload(*s);
  Write(dir, "three_updates.payload", updated);
  Write(dir, "three_updates.ckpt", framed);
}

void JsonSeeds(const fs::path& dir) {
  const std::vector<std::string> bodies = {
      R"({"preds": [0.1, 0.9, 0.4, 0.6], "target": [0, 1, 1, 0]})",
      R"({"preds": [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], "target": [2, 0], "weight": [1, 2.5]})",
      R"({"preds": [true, false], "target": [1, 0], "dtypes": {"preds": "float16", "target": "int32"}})",
      R"({"preds": [], "target": []})",
      R"({"preds": [[]], "target": [[[1]]]})",
      R"({"preds": [[1, 2], [3]], "target": [1, 2]})",
      R"({"indexes": [0, 0, 1], "preds": [1e308, -1e-308, 0.5], "target": [18446744073709551615, 1, 0]})",
      R"({"value": 3, "dtypes": {"value": "bfloat16"}})",
  };
  for (size_t i = 0; i < bodies.size(); ++i) Write(dir, absl::StrCat("body_", i, ".json"), bodies[i]);
}

void ProgramStateSeeds(const fs::path& dir) {
  const std::vector<NamedTensors> rows = StateProgramRows();
  for (size_t i = 0; i < StatePrograms().size(); ++i) {
    Program& p = *StatePrograms()[i];
    if (!p.Reset().ok()) std::abort();
    Write(dir, absl::StrCat("program_", i, "_fresh.state"), *p.SaveState());
    if (!p.Update(rows[i]).ok() || !p.Update(rows[i]).ok()) std::abort();
    Write(dir, absl::StrCat("program_", i, "_two_updates.state"), *p.SaveState());
  }
}

// What `tally eval --save-state` writes, unframed (the target frames it):
// the two state collections, fresh and after rows.
void StateFileSeeds(const fs::path& dir) {
  const std::vector<std::vector<std::string>> specs = {
      {"binary_accuracy", "binary_auroc"}, {"multiclass_accuracy(num_classes=3)", "multiclass_auroc(num_classes=3)"}};
  const std::vector<NamedTensors> rows = StateProgramRows();
  for (size_t i = 0; i < specs.size(); ++i) {
    auto prepared = PrepareEval(specs[i], rows[i], {});
    if (!prepared.ok()) std::abort();
    for (const char* when : {"fresh", "four_rows"}) {
      if (std::string(when) == "four_rows" && !FeedRows(*prepared->program, prepared->used, 0, 4, 4).ok()) {
        std::abort();
      }
      auto file = SaveState(*prepared);
      if (!file.ok()) std::abort();
      auto payload = persist::Unframe(*file, "seed", persist::kStateFile);
      if (!payload.ok()) std::abort();
      Write(dir, absl::StrCat("collection_", i, "_", when, ".payload"), std::string(*payload));
    }
  }
}

}  // namespace
}  // namespace tally::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus DIR   (e.g. $PWD/tests/fuzz/corpus)\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path dir = argv[1];
  tally::fuzz::NpySeeds(dir / "npy");
  tally::fuzz::MetricSpecSeeds(dir / "metric_spec");
  tally::fuzz::IrSeeds(dir / "ir");
  tally::fuzz::CheckpointSeeds(dir / "checkpoint");
  tally::fuzz::JsonSeeds(dir / "json_inputs");
  tally::fuzz::ProgramStateSeeds(dir / "program_state");
  tally::fuzz::StateFileSeeds(dir / "state_file");
  return 0;
}
