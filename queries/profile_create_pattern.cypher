// A step of a routine, ENTAILED by its knowledge node. $knowledge_id $id $step $action
// $arguments (JSON list) $text
MATCH (k:Knowledge {id: $knowledge_id})
CREATE (k)-[:ENTAILS]->(:Pattern {id: $id, knowledge_id: $knowledge_id, step: $step,
        action: $action, arguments: $arguments, text: $text})
