"""Inputs and signatures for the probe child (:mod:`viewer.runtime._child`): resizing graph
inputs (by position or name, through the interpreter or a signature's runner), the file's own
input/output lists, and which model tensors ``allocate_tensors()`` left without memory."""

from __future__ import annotations


def _resize_inputs(interp, input_shapes: dict) -> list[dict]:
    details = interp.get_input_details()
    by_name = {d["name"]: d for d in details}
    done = []
    for key, shape in input_shapes.items():
        if isinstance(key, str) and key.lstrip("-").isdigit() and key not in by_name:
            key = int(key)
        if isinstance(key, int):
            if not 0 <= key < len(details):
                raise ValueError(f"no input {key}; the model has {len(details)} inputs")
            d = details[key]
        elif key in by_name:
            d = by_name[key]
        else:
            raise ValueError(f"no input named {key!r}; inputs: {', '.join(by_name)}")
        interp.resize_tensor_input(d["index"], [int(s) for s in shape])
        done.append({"input": d["index"], "shape": [int(s) for s in shape]})
    return done


def _signature_of(interp, subgraph: int) -> tuple[str, dict] | None:
    """(key, signature def) of the signature whose runner reaches ``subgraph``, or None."""
    wrapper = interp._interpreter
    try:
        sigs = interp._get_full_signature_list()
    except Exception:
        return None
    for key, sig in sigs.items():
        try:
            if int(wrapper.GetSubgraphIndexFromSignature(key)) == subgraph:
                return key, sig
        except Exception:
            continue
    return None


def _file_io(path: str, subgraph: int) -> tuple[list[int], list[int]] | None:
    """The subgraph's input and output tensor ids as the model file lists them."""
    import mmap

    from ai_edge_litert import schema_py_generated as S

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            model = S.Model.GetRootAs(mm, 0)
            if subgraph >= model.SubgraphsLength():
                return None
            sg = model.Subgraphs(subgraph)
            return ([int(sg.Inputs(k)) for k in range(sg.InputsLength())],
                    [int(sg.Outputs(k)) for k in range(sg.OutputsLength())])
    except Exception:
        return None


def _resize_signature_inputs(interp, subgraph: int, sig: dict, file_inputs: list[int],
                             input_shapes: dict) -> list[dict]:
    """``resize_tensor_input`` for a subgraph reached through its signature runner.

    Keys: position among the subgraph's inputs (as in the file), the tensor's name, or the
    signature's input name.
    """
    wrapper = interp._interpreter
    by_name = {wrapper.TensorName(t, subgraph): t for t in file_inputs}
    by_name.update({k: int(v) for k, v in sig.get("inputs", {}).items()})
    done = []
    for key, shape in input_shapes.items():
        if isinstance(key, str) and key.lstrip("-").isdigit() and key not in by_name:
            key = int(key)
        if isinstance(key, int):
            if not 0 <= key < len(file_inputs):
                raise ValueError(f"no input {key}; subgraph {subgraph} has {len(file_inputs)} inputs")
            t = file_inputs[key]
        elif key in by_name:
            t = by_name[key]
        else:
            raise ValueError(f"no input named {key!r}; inputs: {', '.join(by_name)}")
        import numpy as np

        wrapper.ResizeInputTensor(t, np.array([int(s) for s in shape], dtype=np.int32), False, subgraph)
        done.append({"input": t, "shape": [int(s) for s in shape]})
    return done


def _unallocated(interp, subgraph: int, n_tensors: int) -> list[int]:
    """Model tensors with bytes but no data after ``allocate_tensors()`` (deferred to Invoke).

    Read through the wrapper (``tensor()`` raises "Tensor data is null"); 0-d tensors and
    strings cannot be viewed and are skipped.
    """
    import numpy as np

    wrapper = interp._interpreter
    out = []
    for i in range(n_tensors):
        try:
            ty = wrapper.TensorType(i, subgraph)
            shape = wrapper.TensorSize(i, subgraph)
        except (ValueError, RuntimeError):
            continue
        if ty in (np.bytes_, np.object_, np.str_) or len(shape) == 0 or int(np.prod(shape)) == 0:
            continue
        try:
            wrapper.tensor(interp, i, subgraph)
        except ValueError:
            out.append(i)
    return out
