// Set one fact about the memory. $key $value
MERGE (m:MemoryInfo {key: $key}) SET m.value = $value
