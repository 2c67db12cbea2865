#include <string>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/io/npy.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {

void FuzzNpy(absl::string_view data) {
  absl::StatusOr<io::NpyArray> a = io::ParseNpy(data, "fuzz.npy");
  if (!a.ok()) return;
  // ParseNpy returns only arrays that SerializeNpy may write.
  absl::Status valid = io::ValidateNpyArray(*a);
  FuzzCheck(valid.ok(), absl::StrCat("parsed array does not validate: ", valid.message()));
  absl::StatusOr<io::NpyArray> back = io::ParseNpy(io::SerializeNpy(*a), "again.npy");
  FuzzCheck(back.ok(), absl::StrCat("serialized array does not parse: ", back.status().message()));
  FuzzCheck(back->dtype == a->dtype && back->shape == a->shape && back->data == a->data,
            "serialize -> parse changed the array");
  // LibTorch may refuse a shape that ParseNpy accepts (an empty array whose
  // other dimensions overflow when multiplied): an error, not a crash.
  absl::StatusOr<at::Tensor> t = tally::TensorFromNpy(*a);
  if (t.ok()) FuzzCheck(t->numel() == a->numel(), "TensorFromNpy changed the element count");
}

}  // namespace tally::fuzz
