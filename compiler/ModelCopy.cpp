//===- ModelCopy.cpp - The source model a program keeps beside it ---------===//

#include "compiler/ModelCopy.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace {

LogicalResult fail(llvm::StringRef copy, const llvm::Twine &why) {
  llvm::errs() << "otc-compile: cannot write the model copy '" << copy
               << "': " << why << "\n";
  return failure();
}

/// Writes `bytes` to `path` through a temporary file beside it, so that a
/// failed write never leaves half a model where the program expects one.
LogicalResult writeAtomically(llvm::StringRef path, llvm::StringRef bytes) {
  std::string tmp = (path + ".tmp").str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_None);
    if (ec)
      return fail(path, ec.message());
    os << bytes;
    os.close();
    if (os.has_error()) {
      llvm::sys::fs::remove(tmp);
      return fail(path, os.error().message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return fail(path, ec.message());
  }
  return success();
}

} // namespace

std::string otc::modelCopyName(llvm::StringRef program) {
  return (llvm::sys::path::filename(program) + ".model.onnx").str();
}

LogicalResult otc::writeModelCopy(llvm::StringRef model, llvm::StringRef copy) {
  bool same = false;
  if (!llvm::sys::fs::equivalent(model, copy, same) && same)
    return success();
  auto buf = llvm::MemoryBuffer::getFile(model, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(copy,
                "cannot read '" + model + "': " + buf.getError().message());
  llvm::StringRef bytes = (*buf)->getBuffer();
  onnx::ModelProto proto;
  if (bytes.size() > size_t(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), int(bytes.size())))
    return fail(copy, "'" + model + "' is not a valid ONNX model");
  bool external = false;
  for (const onnx::TensorProto &t : proto.graph().initializer())
    external |= t.data_location() == onnx::TensorProto::EXTERNAL;
  if (!external)
    return writeAtomically(copy, bytes);

  // The importer has checked every location, offset and length: gather the
  // bytes into <copy>.data, in the initializers' order.
  llvm::SmallString<256> dir(model);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  std::string dataName = (llvm::sys::path::filename(copy) + ".data").str();
  std::string data;
  for (onnx::TensorProto &t : *proto.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    std::string location;
    long long offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        llvm::StringRef(kv.value()).getAsInteger(10, offset);
      else if (kv.key() == "length")
        llvm::StringRef(kv.value()).getAsInteger(10, length);
    }
    llvm::SmallString<256> file(dir);
    llvm::sys::path::append(file, location);
    auto ext = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!ext)
      return fail(copy, "cannot read external data '" + file +
                            "': " + ext.getError().message());
    llvm::StringRef all = (*ext)->getBuffer();
    if (length < 0)
      length = (long long)all.size() - offset;
    if (offset < 0 || length < 0 || (size_t)offset > all.size() ||
        (size_t)length > all.size() - offset)
      return fail(copy, "external data of '" + t.name() + "' lies outside '" +
                            file + "'");
    // 64-byte aligned, as ONNX's own writer aligns tensors for mapping.
    data.resize((data.size() + 63) / 64 * 64, '\0');
    size_t at = data.size();
    data.append(all.data() + offset, length);
    t.clear_external_data();
    auto *kv = t.add_external_data();
    kv->set_key("location");
    kv->set_value(dataName);
    kv = t.add_external_data();
    kv->set_key("offset");
    kv->set_value(std::to_string(at));
    kv = t.add_external_data();
    kv->set_key("length");
    kv->set_value(std::to_string(length));
  }
  std::string out;
  if (!proto.SerializeToString(&out))
    return fail(copy, "the model does not serialize");
  return failure(failed(writeAtomically((copy + ".data").str(), data)) ||
                 failed(writeAtomically(copy, out)));
}
