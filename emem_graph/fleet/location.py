"""FleetLocation: where a fleet's data lives (``s3://bucket/prefix``, ``file://path`` or a plain
path) and the one place that reads and writes its objects.

Object storage is reached the standard way: the AWS environment variables (AWS_ENDPOINT_URL,
AWS_ALLOW_HTTP, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or
AWS_DEFAULT_REGION), or the same given explicitly. Objects go through pyarrow's file systems; the
shared vector tables are opened by LanceDB with the same settings (``lance_uri``,
``lance_options``). Every object appears whole: an object store's PUT is atomic, and on a disk
a file is written beside its name and renamed into place.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from emem_graph.errors import InvalidInputError, StorageError


class FleetStorageError(StorageError):
    """The fleet location could not be read or written (unreachable endpoint, missing bucket,
    refused credentials, a damaged object)."""


class DamagedFleetFileError(FleetStorageError):
    """A file at the fleet location is not what a push writes (not JSON, not Parquet, or
    fields and columns of the wrong shape): damaged, or put there by someone else. The message
    names the file and what is wrong with it."""


MAX_JSON_BYTES = 1 << 20
"""The largest JSON file read (a push's manifest and index are a few hundred bytes)."""


@dataclass(frozen=True)
class S3Settings:
    """How to reach an S3-compatible store; None fields fall back to the AWS environment."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    allow_http: bool | None = None

    def resolved(self) -> S3Settings:
        """These settings with the unset ones read from the AWS environment variables."""
        env = os.environ
        allow = self.allow_http
        if allow is None and "AWS_ALLOW_HTTP" in env:
            allow = env["AWS_ALLOW_HTTP"].strip().lower() in ("1", "true", "yes")
        return S3Settings(
            endpoint_url=self.endpoint_url or env.get("AWS_ENDPOINT_URL"),
            region=self.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
            access_key_id=self.access_key_id or env.get("AWS_ACCESS_KEY_ID"),
            secret_access_key=self.secret_access_key or env.get("AWS_SECRET_ACCESS_KEY"),
            session_token=self.session_token or env.get("AWS_SESSION_TOKEN"),
            allow_http=allow,
        )


@dataclass
class FleetLocation:
    """The fleet's root: an ``s3://bucket/prefix`` URI, a ``file://`` URI or a plain path.

    Args:
        uri: where the fleet lives.
        s3: settings for an ``s3://`` URI (unset fields come from the AWS environment).

    Raises:
        InvalidInputError: an empty URI, another scheme, an s3 URI without a bucket.
    """

    uri: str
    s3: S3Settings = field(default_factory=S3Settings)

    def __post_init__(self) -> None:
        text = self.uri.strip()
        if not text:
            raise InvalidInputError("the fleet URI is empty: give s3://bucket/prefix or a path")
        parsed = urlparse(text)
        if parsed.scheme == "s3":
            if not parsed.netloc:
                raise InvalidInputError(f"{text!r} names no bucket: use s3://bucket/prefix")
            self.is_s3 = True
            self.settings = self.s3.resolved()
            self.root = f"{parsed.netloc}/{parsed.path.strip('/')}".rstrip("/")
            self.fs: pafs.FileSystem = self._s3_filesystem()
        elif parsed.scheme in ("file", ""):
            if parsed.scheme == "file" and parsed.netloc not in ("", "localhost"):
                raise InvalidInputError(
                    f"{text!r} names a host ({parsed.netloc!r}): a file URI is file:///absolute/"
                    "path; give a relative path without file://"
                )
            path = Path(parsed.path if parsed.scheme == "file" else text).expanduser().resolve()
            self.is_s3 = False
            self.settings = S3Settings()
            self.root = str(path)
            self.fs = pafs.LocalFileSystem()
        else:
            raise InvalidInputError(
                f"unsupported fleet URI scheme {parsed.scheme!r} in {text!r}: use s3://bucket/"
                "prefix, file:///path or a plain path"
            )

    def _s3_filesystem(self) -> pafs.FileSystem:
        s = self.settings
        kwargs: dict[str, Any] = {"region": s.region or "us-east-1"}
        if s.endpoint_url:
            endpoint = urlparse(s.endpoint_url)
            kwargs["endpoint_override"] = endpoint.netloc or s.endpoint_url
            kwargs["scheme"] = endpoint.scheme or ("http" if s.allow_http else "https")
        if s.access_key_id:
            kwargs.update(access_key=s.access_key_id, secret_key=s.secret_access_key)
            if s.session_token:
                kwargs["session_token"] = s.session_token
        return pafs.S3FileSystem(**kwargs)

    def __str__(self) -> str:
        return f"s3://{self.root}" if self.is_s3 else self.root

    # --- the shared vector tables (LanceDB) ---------------------------------------------

    @property
    def lance_uri(self) -> str:
        """The LanceDB database of the fleet's shared tables."""
        return f"s3://{self.root}/vectors" if self.is_s3 else f"{self.root}/vectors"

    @property
    def lance_options(self) -> dict[str, str]:
        """LanceDB's storage_options for these settings (empty for a disk)."""
        if not self.is_s3:
            return {}
        s = self.settings
        options = {"aws_region": s.region or "us-east-1"}
        if s.endpoint_url:
            options["aws_endpoint"] = s.endpoint_url
        if s.allow_http or (s.endpoint_url or "").startswith("http://"):
            options["allow_http"] = "true"
        if s.access_key_id:
            options["aws_access_key_id"] = s.access_key_id
            options["aws_secret_access_key"] = s.secret_access_key or ""
        if s.session_token:
            options["aws_session_token"] = s.session_token
        return options

    # --- objects --------------------------------------------------------------------------

    def _path(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def exists(self, relative: str) -> bool:
        """Whether the object (or, on a disk, the file) ``relative`` exists."""
        info = self._call(lambda: self.fs.get_file_info(self._path(relative)), relative)
        return bool(info.type == pafs.FileType.File)

    def names_under(self, relative: str) -> list[str]:
        """The names directly under the folder ``relative`` (sorted; none when it is absent)."""

        def listing() -> list[str]:
            selector = pafs.FileSelector(self._path(relative), allow_not_found=True)
            return sorted(info.base_name for info in self.fs.get_file_info(selector))

        return self._call(listing, relative)

    def usage(self) -> tuple[int, int]:
        """(objects, bytes) stored under the root: the pushes' files and the shared table."""

        def total() -> tuple[int, int]:
            selector = pafs.FileSelector(self.root, recursive=True, allow_not_found=True)
            files = [i for i in self.fs.get_file_info(selector) if i.type == pafs.FileType.File]
            return len(files), sum(int(i.size or 0) for i in files)

        return self._call(total, "")

    def read_bytes(self, relative: str) -> bytes | None:
        """The object's bytes, None when it does not exist."""

        def read() -> bytes | None:
            try:
                with self.fs.open_input_stream(self._path(relative)) as stream:
                    return bytes(stream.read())
            except (FileNotFoundError, NotADirectoryError):
                return None  # NotADirectoryError: a file stands where a folder would be
            except OSError:
                info = self.fs.get_file_info(self._path(relative))
                if info.type == pafs.FileType.Directory:
                    raise DamagedFleetFileError(
                        f"{self}/{relative} is a folder where a file belongs"
                    ) from None
                raise

        return self._call(read, relative)

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write the object whole: readers see the old one or the new one, never a part."""

        def write() -> None:
            target = self._path(relative)
            if self.is_s3:
                with self.fs.open_output_stream(target) as stream:
                    stream.write(data)
                return
            self.fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
            partial = f"{target}.{uuid.uuid4().hex}.partial"
            with self.fs.open_output_stream(partial) as stream:
                stream.write(data)
            self.fs.move(partial, target)

        self._call(write, relative)

    def read_json(self, relative: str) -> dict[str, Any] | None:
        """A JSON object, None when it does not exist."""
        data = self.read_bytes(relative)
        if data is None:
            return None
        if len(data) > MAX_JSON_BYTES:
            raise DamagedFleetFileError(
                f"{self}/{relative} holds {len(data)} bytes, more than the {MAX_JSON_BYTES} "
                "a fleet's JSON file may"
            )
        try:
            value = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise DamagedFleetFileError(f"{self}/{relative} is not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise DamagedFleetFileError(f"{self}/{relative} does not hold a JSON object")
        return value

    def write_json(self, relative: str, value: dict[str, Any]) -> None:
        """Write a JSON object whole."""
        self.write_bytes(relative, json.dumps(value, indent=1, sort_keys=True).encode("utf-8"))

    def read_parquet(self, relative: str) -> pa.Table | None:
        """A Parquet table, None when it does not exist."""
        data = self.read_bytes(relative)
        return None if data is None else self.parse_parquet(relative, data)

    def parse_parquet(self, relative: str, data: bytes) -> pa.Table:
        """The Parquet table in ``data``, the bytes of the object ``relative``.

        Raises:
            DamagedFleetFileError: they are not a readable Parquet file.
        """
        try:
            return pq.read_table(pa.BufferReader(data))
        except (OSError, pa.ArrowException) as exc:
            raise DamagedFleetFileError(
                f"{self}/{relative} is not a readable Parquet file"
            ) from exc

    def write_parquet(self, relative: str, table: pa.Table) -> None:
        """Write a Parquet table whole."""
        sink = io.BytesIO()
        pq.write_table(table, sink)
        self.write_bytes(relative, sink.getvalue())

    def _call(self, action: Any, relative: str) -> Any:
        try:
            return action()
        except (OSError, pa.ArrowException) as exc:
            raise FleetStorageError(
                f"cannot reach {self}/{relative}: {exc} (check the URI, the bucket and the "
                "AWS_* settings)"
            ) from exc
