import socket

import pytest

from bert_tf.training.distribution import check_reachable


def test_tpu_address_probe():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        check_reachable(f"grpc://127.0.0.1:{server.getsockname()[1]}")  # listening: passes
        closed = server.getsockname()[1]
    with pytest.raises(ConnectionError, match=f"nothing accepts connections at grpc://127.0.0.1:{closed}"):
        check_reachable(f"grpc://127.0.0.1:{closed}", timeout=5)
    for bad in ("grpc://10.0.0.2", "grpc://:8470", "grpc://host:port"):
        with pytest.raises(ConnectionError, match="is not a grpc://host:port address"):
            check_reachable(bad)
    for left_to_tensorflow in (None, "", "local"):
        check_reachable(left_to_tensorflow)
